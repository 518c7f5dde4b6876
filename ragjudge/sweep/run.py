"""A k-sweep from start to end: choose the run (new or resumed), then retrieve once, generate
per k, judge per k, store all, and summarise.

The parts, one job each: ``components`` (what runs), ``data`` (the test set), ``identity``
(what a run is, which run resumes), ``plan`` (a pure plan of what is still missing: answers by
(case, k), judge calls deduplicated, prefix judges once at k_max) and ``execute`` (the
``Executor`` the config's ``executor`` names, in process or on Ray, that carries the plan out
and writes through the run store). Every stage skips what the store already holds, so a
resumed run continues where it stopped and never writes a
row twice. A budget stop ends the run as ``stopped_budget`` (resumable, e.g. with a larger
budget); a stage whose every LLM call failed ends it as ``failed`` (``stages``), as does a
retriever of the user's that raises (a ``UserCodeError`` naming it and where its code raised;
a retrieval function, asked before the run exists, raises it before any run is stored); Ctrl-C
ends it as ``interrupted`` (resumable).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypedDict, Unpack

from ragjudge.adapters import with_retrieved
from ragjudge.errors import ConfigError, UserCodeError
from ragjudge.heap import collector_eased
from ragjudge.judges.base import conform
from ragjudge.judges.coverage import coverage_floor
from ragjudge.llm.ledger import LedgerEntry
from ragjudge.schema import TestSet
from ragjudge.store import RunStore, open_store
from ragjudge.store.view import RunView
from ragjudge.sweep.analysis import SweepSummary
from ragjudge.sweep.budget import BudgetExhausted
from ragjudge.sweep.commit import Committer
from ragjudge.sweep.components import Components, GivenParts, build_components
from ragjudge.sweep.config import SweepConfig
from ragjudge.sweep.data import check_ks, load_dataset
from ragjudge.sweep.digest import compute, keep, summarise
from ragjudge.sweep.execute import (
    Executor,
    Progress,
    blaming,
    build_executor,
    prepare_executor,
    retriever_part,
)
from ragjudge.sweep.identity import (
    code_change_note,
    fresh_manifest,
    run_definition,
    select_run,
)
from ragjudge.sweep.plan import plan_answers, plan_judging
from ragjudge.sweep.stages import StageFailedError, stored_judging_failure


@dataclass
class SweepOutcome:
    run_id: str
    status: str
    resumed: bool
    summary: SweepSummary
    counts: dict[str, int]
    llm_calls: int = 0
    """LLM calls this process sent (cache hits excluded)."""
    llm_answered: int = 0
    """Of those, the calls the endpoint answered (a reply arrived; from the ledger)."""
    cached_calls: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    """Wall seconds of this process per phase: ``retrieval``, ``generate@k``,
    ``judge:prefix`` (prefix judges at k_max), ``judge@k``."""


async def execute_run(
    executor: Executor,
    store: RunStore,
    run_id: str,
    config: SweepConfig,
    testset: TestSet,
    comp: Components,
) -> None:
    """Plan and carry out the stages still missing from run ``run_id``, stage by stage (each
    plan reads what the store holds after the previous stage)."""
    if not store.cases(run_id):
        store.put_cases(run_id, testset.cases)
    rankings = store.rankings(run_id)
    if not all(c.id in rankings for c in testset.cases):
        rankings = executor.retrieve()
    if not store.retrieval_metrics(run_id):
        executor.score_retrieval(rankings)
    aplan = plan_answers([c.id for c in testset.cases], config.ks, store.answers(run_id))
    answers = await executor.generate(aplan, rankings)
    judges = [conform(j) for j in comp.judges]
    jplan = plan_judging(
        judges, testset.cases, config.ks, answers, store.judge_results(run_id), aplan.renewed
    )
    await executor.judge(jplan)
    failure = stored_judging_failure(store.judge_result_rows(run_id), [j.name for j in judges])
    if failure is not None:
        raise StageFailedError(failure)


class LedgerSink:
    """Stores the run's ledger entries (calls and HTTP attempts), a ``DurableHook``: entries
    queue here and are committed in a worker thread, together (``Committer``), when the client
    settles the ledger after a request's ``sent`` entry and before the request leaves, so the
    ledger of a run killed at any point holds every request the endpoint received; the others
    (an attempt's answer, a call's total) go with the next commit or with ``settle()`` when the
    run's work ends, however it ends. The three entries of a call were three transactions on
    the event loop, about 40 % of a sweep's loop time against a local server."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self._entries: Committer[LedgerEntry] = Committer(partial(store.append_ledger, run_id))

    def __call__(self, entry: LedgerEntry) -> None:
        self._entries.add([entry])

    async def settle(self) -> None:
        await self._entries.settle()


def _answered_counter(count: list[int]) -> Callable[[Any], None]:
    """Count, in ``count[0]``, the calls sent and answered, as ``TokenUsage.calls`` counts
    them (a repair call is one more): not cached, and a reply arrived (no error, or one about
    the reply itself: ``parse_error``, ``refused``)."""

    def sink(entry: Any) -> None:
        replied = entry.error_kind in (None, "parse_error", "refused")
        run_call = "preflight" not in entry.tags
        if entry.kind == "call" and run_call and not entry.cached and entry.attempts and replied:
            count[0] += 1 + int(entry.repair)

    return sink


class SweepOptions(TypedDict, total=False):
    """The keyword options of ``run_sweep`` / ``arun_sweep`` (defaults: ``arun_sweep``)."""

    store: RunStore | None
    resume: str | None
    new: bool
    components: Components | None
    testset: TestSet | None
    progress: Progress | None
    tags: Mapping[str, str] | None
    progress_bar: bool


def run_sweep(config: SweepConfig, **options: Unpack[SweepOptions]) -> SweepOutcome:
    """Run (or resume) a sweep to its end or to a budget stop; return its summary
    (``arun_sweep`` in a new event loop)."""
    return asyncio.run(arun_sweep(config, **options))


def _check_cost_limit(config: SweepConfig, comp: Components) -> None:
    """Refuse ``budget.max_cost_usd`` when the run's model has no price: its calls would cost
    0 and the limit never stop the run (it ran to the end in silence)."""
    if config.budget.max_cost_usd is None or comp.llm is None:
        return
    ledger, model = getattr(comp.llm, "ledger", None), getattr(comp.llm, "model", None)
    if ledger is not None and model is not None and ledger.prices.price(model) is None:
        raise ConfigError(
            f"budget.max_cost_usd: no price is known for model {model!r}, so its calls would "
            "count as free and the limit would never stop the run; set budget.max_calls, or "
            "give the LLM client a PriceTable with its price (docs/llm.md)"
        )


def _judges_that_run(config: SweepConfig, comp: Components) -> SweepConfig:
    """``config`` naming the judges that run (the summary's judges), whatever its names said;
    its objective weights checked against them."""
    names = [j.name for j in comp.judges]
    try:
        config.check_weights(names)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return config.model_copy(update={"judges": config.judges.model_copy(update={"names": names})})


async def _execute_to_status(
    executor: Executor,
    store: RunStore,
    run_id: str,
    config: SweepConfig,
    testset: TestSet,
    comp: Components,
    say: Progress,
) -> str:
    """Run the missing stages; ``finished`` or ``stopped_budget`` (a budget stop). A failure
    stores the run as ``failed`` and re-raises (a failed stage or a raising part of the user's,
    ``UserCodeError``, says how to resume); Ctrl-C (a
    ``KeyboardInterrupt``, or the cancellation ``asyncio.run`` turns SIGINT into) stores it as
    ``interrupted``, says how to resume and re-raises."""
    try:
        problem = await comp.llm.preflight() if comp.llm is not None else None
        if problem is not None:  # a dead or misconfigured endpoint, found before spending
            raise StageFailedError(problem.message)
        with collector_eased():  # the run allocates by the million: ragjudge.heap
            await execute_run(executor, store, run_id, config, testset, comp)
    except BudgetExhausted as exc:
        say(f"budget reached: {exc}; resume with a larger budget to continue")
        return "stopped_budget"
    except (StageFailedError, UserCodeError) as exc:
        store.set_status(run_id, "failed")
        raise type(exc)(
            f"{exc}; run {run_id} is stored as failed: fix the cause and run the same "
            "command again to resume it"
        ) from exc.__cause__
    except (KeyboardInterrupt, asyncio.CancelledError):
        store.set_status(run_id, "interrupted")
        say(
            f"interrupted: run {run_id} is stored as interrupted; run the same command again "
            "to resume it"
        )
        raise
    except BaseException:
        store.set_status(run_id, "failed")
        raise
    return "finished"


async def arun_sweep(
    config: SweepConfig,
    *,
    store: RunStore | None = None,
    resume: str | None = None,
    new: bool = False,
    components: Components | None = None,
    testset: TestSet | None = None,
    progress: Progress | None = None,
    tags: Mapping[str, str] | None = None,
    progress_bar: bool = False,
) -> SweepOutcome:
    """Run (or resume) a sweep inside a running event loop (notebooks); ``run_sweep`` from
    synchronous code. ``resume`` names a run to continue, else the newest unfinished run with
    the same identity continues unless ``new``; ``components`` and ``testset`` replace what the
    config names; ``progress`` receives one line per phase, ``progress_bar`` also shows rich
    bars."""
    say: Progress = progress or (lambda _msg: None)
    coverage_floor()  # a bad floor is refused before any work, not after the calls are paid
    store = store or open_store(
        default=config.store.url.get_secret_value() if config.store is not None else None
    )
    comp = components or build_components(config, GivenParts(max_concurrency=config.concurrency))
    _check_cost_limit(config, comp)
    testset = testset or load_dataset(config)
    with blaming(retriever_part(comp.retriever), theirs=True):  # only a function asks here
        testset = with_retrieved(testset, comp.retriever, config.k_max)
    check_ks(config, testset)
    definition = run_definition(config, comp)  # the config as given, before the names below
    recipe = config if components is None else None  # what a Ray worker builds its parts from
    given = list(config.judges.names)
    config = _judges_that_run(config, comp)
    prepare_executor(config)  # e.g. join the Ray cluster: a failure leaves no run behind
    fresh = fresh_manifest(definition, config, comp, testset, tags, given)
    note = code_change_note(store, fresh) if resume is None and not new else None
    manifest, resumed = select_run(store, fresh, resume=resume, new=new)
    if note is not None and not resumed:
        say(note)
    run_id = manifest.run_id
    with store.lease(run_id):
        if resumed:
            say(f"resuming run {run_id} (status {manifest.status})")
            store.set_status(run_id, "running")
        answered = [0]
        ledger = comp.llm.ledger if comp.llm is not None else None
        stored = LedgerSink(store, run_id)
        hooks = [stored, _answered_counter(answered)]
        if ledger is not None:
            for hook in hooks:
                ledger.subscribe(hook)
        executor = build_executor(
            config, testset, store, run_id, comp, say, progress_bar, recipe=recipe
        )
        try:
            status = await _execute_to_status(executor, store, run_id, config, testset, comp, say)
        finally:
            executor.close()
            if ledger is not None:
                for hook in hooks:  # the components may serve another run (notebooks)
                    ledger.unsubscribe(hook)
            await stored.settle()
        store.set_status(run_id, status, finished=status == "finished")
    view = RunView.read(store, run_id)
    summary = summarise(view, config)
    keep(store, compute(store, view, summary, config))  # what `ragjudge ui` shows of the run
    return SweepOutcome(
        run_id=run_id,
        status=status,
        resumed=resumed,
        summary=summary,
        counts=store.counts(run_id),
        llm_calls=executor.budget.session_calls,
        llm_answered=answered[0],
        cached_calls=executor.budget.session_cached,
        timings=dict(executor.timings),
    )


def summarise_run(store: RunStore, run_id: str, config: SweepConfig | None = None) -> SweepSummary:
    """The summary of a stored run (its own config unless another objective is given)."""
    return summarise(RunView.read(store, run_id), config)
