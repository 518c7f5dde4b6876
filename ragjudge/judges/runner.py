"""Running judges over many items concurrently.

``run_judges(judges, items)`` schedules every (judge, item) pair at once under one semaphore of
``concurrency`` slots and returns, per judge name, the results in item order. A judge that
raises (a bug in its own code, not a failed call: those already come back typed) becomes a
``judge_error`` result (``crashed``) naming the exception and where the judge's code raised it,
so a run never crashes, never produces a NaN and never blames the LLM endpoint for it. Every
runner (this one, the sweep's executors, the Ray workers) walks the items in
``prepared_slices``, so a judge that batches (``BatchedJudge``) prepares each slice first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

from ragjudge.errors import raised_at
from ragjudge.heap import collector_eased
from ragjudge.judges.base import conform, precheck, result_backend
from ragjudge.judges.items import cap_item, record_truncation
from ragjudge.llm.settings import error_text
from ragjudge.protocols import BatchedJudge, Judge, SpendingJudge
from ragjudge.schema import JudgeInput, JudgeResult, JudgeStatus, SpendEstimate


def crashed(judge: Judge, item: JudgeInput, exc: BaseException) -> JudgeResult:
    """The typed result standing in for a judge that raised: status ``judge_error``, the error
    ``judge raised Type: message (at file:line in function)`` naming the innermost frame of the
    judge's code (``ragjudge.errors.raised_at``), never a traceback."""
    return JudgeResult(
        judge=judge.name,
        judge_version=str(getattr(judge, "version", "")),
        backend=result_backend(judge),
        item_id=item.id,
        score=None,
        status=JudgeStatus.judge_error,
        error=f"judge raised {error_text(exc)} (at {raised_at(exc)})",
    )


def as_read(judge: Judge, item: JudgeInput) -> tuple[JudgeInput, dict[str, float]]:
    """``item`` as ``judge`` reads it, and the features recording any cut: a judge that
    declares an ``input_cap`` (``CappedJudge``: the offline judges) reads it cut to bounded
    length (bounded work on hostile input, ``items.cap_item``)."""
    cap = getattr(judge, "input_cap", None)  # CappedJudge's one member beyond Judge's
    if cap is not None:  # (an isinstance check of the Protocol costs ~25 us an item)
        return cap_item(item, *cap)
    return item, {}


async def judge_one(judge: Judge, item: JudgeInput) -> JudgeResult:
    """``judge.judge(item)`` after the shared pre-check (``ragjudge.judges.base.precheck``),
    with an exception turned into a typed result. A ``CappedJudge`` reads the item cut to
    bounded length (``ragjudge.judges.items.cap_item``; the cut is in ``evidence.features``)."""
    skip = precheck(judge, item)
    if skip is not None:
        return skip
    item, cut = as_read(judge, item)
    try:
        return record_truncation(await judge.judge(item), cut)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return crashed(judge, item, exc)


PREPARE_SLICE = 256
"""Items prepared at once: each slice is prepared, then judged, so that what ``prepare``
computed (the offline judges: about 20 vectors an item) is still cached when it is used."""


def prepared_slices(
    judges: Sequence[Judge], items: Sequence[JudgeInput], *, first_prepared: bool = False
) -> Iterator[range]:
    """The index ranges of ``items`` to judge one after another. When some of ``judges``
    batches (``BatchedJudge``): slices of ``PREPARE_SLICE``, each prepared by those judges on
    the items as ``judge_one`` passes them (pre-checked, cut) just before it is yielded
    (but the first when ``first_prepared``: the caller prepared it); otherwise one range of
    them all. A ``prepare`` that raises is passed over: it changes no result, and judging the
    items reports the error."""
    batched = [j for j in judges if isinstance(j, BatchedJudge)]
    step = PREPARE_SLICE if batched else max(len(items), 1)
    for start in range(0, len(items), step):
        part = range(start, min(start + step, len(items)))
        for judge in batched if start or not first_prepared else ():
            todo = [as_read(judge, items[i])[0] for i in part if precheck(judge, items[i]) is None]
            try:
                judge.prepare(todo)
            except Exception:
                continue  # judging the items reports the error
        yield part


async def may_spend(judge: Judge, item: JudgeInput) -> bool:
    """Whether judging ``item`` may send a paid call: a ``SpendingJudge`` says
    (``spends``); any other judge may."""
    return await judge.spends(item) if isinstance(judge, SpendingJudge) else True


async def estimate_spend(
    judges: Sequence[Judge], items: Sequence[JudgeInput]
) -> list[SpendEstimate]:
    """What each ``SpendingJudge`` among ``judges`` expects to spend on ``items``, before
    anything is spent (the cascade's pre-flight: items it will escalate, calls, cost)."""
    return [await j.estimate_spend(items) for j in judges if isinstance(j, SpendingJudge)]


async def run_judges(
    judges: Sequence[Judge],
    items: Sequence[JudgeInput],
    *,
    concurrency: int = 16,
    progress: bool = True,
) -> dict[str, list[JudgeResult]]:
    """Judge name -> one result per item (same order as ``items``).

    ``progress`` shows a rich progress bar on stderr (total = judges x items). The garbage
    collector is eased meanwhile (``ragjudge.heap.collector_eased``).
    """
    judges = [conform(j) for j in judges]
    names = [j.name for j in judges]
    if len(set(names)) != len(names):
        raise ValueError(f"two judges share a name: {names}")
    sem = asyncio.Semaphore(max(1, concurrency))
    out: dict[str, list[JudgeResult | None]] = {n: [None] * len(items) for n in names}
    total = len(judges) * len(items)

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    bar = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=not progress,
        transient=True,
    )
    with bar, collector_eased():
        task = bar.add_task("judging", total=total)

        async def one(judge: Judge, i: int) -> None:
            async with sem:
                out[judge.name][i] = await judge_one(judge, items[i])
            bar.advance(task)

        for part in prepared_slices(judges, items):
            await asyncio.gather(*(one(j, i) for i in part for j in judges))
    return {n: [r for r in rs if r is not None] for n, rs in out.items()}
