"""``ragjudge.sweep``: a k-sweep of your own retriever, generator and judges, from Python.

The test set is a ragjudge/BEIR folder (``ragjudge.io.load_testset``), a ``TestSet``, or a
list of dicts ``{"id", "question", "reference", "relevant": {doc_id: grade}}`` (no corpus:
the retriever owns it). The retriever and generator are built-in names (``bm25``, ``dense``,
``hybrid``; ``extractive``, ``chat``) or your own parts in any form ``ragjudge.adapters``
accepts (plain functions, sync or async; LangChain retrievers and runnables; objects meeting
``ragjudge.protocols``). Judges are names (built for ``backend``), ``Judge`` objects or
``@ragjudge.judge`` functions.

The sweep itself is ``ragjudge.sweep.run.arun_sweep``, as the CLI runs it: stored in the run
store (``RAGJUDGE_HOME`` or ``store=``), resumable, identified by the definition plus the
``name@version`` of every part passed as an object, so running the same call again after a
crash or a budget stop continues that run, and a changed function never resumes it. A
retrieval function is asked once per question at the largest k before the run starts; the
documents it returns join the test set's corpus, so the answers are generated from exactly
what it returned.

Your code raising is blamed on it, in one line naming the part, the exception and the file and
line of your code that raised it: a retriever raises ``ragjudge.errors.UserCodeError`` (the
exception is its ``__cause__``; a run it stopped is stored as ``failed`` and resumes when the
same call is made again); a generator's failed answers carry it (when every answer fails,
``StageFailedError`` quotes the first); a judge's results are ``judge_error``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ragjudge.errors import ConfigError, DataError
from ragjudge.generate import GENERATORS
from ragjudge.retrieval import RETRIEVERS
from ragjudge.schema import TestCase, TestSet
from ragjudge.sweep.components import GivenParts, build_components
from ragjudge.sweep.run import SweepOutcome

SweepResult = SweepOutcome
"""What ``sweep`` returns: run id, status, the ``SweepSummary`` the CLI prints
(``.summary.choice.best_k``, ``.summary.table()``), counts, calls and timings."""


def as_testset(testset: Any, name: str | None = None) -> TestSet:
    """A folder, a ``TestSet`` or a list of case dicts as a ``TestSet``."""
    if isinstance(testset, TestSet):
        return testset
    if isinstance(testset, str | Path):
        from ragjudge.io import load_testset

        return load_testset(Path(testset))
    if isinstance(testset, Sequence) and not isinstance(testset, str | bytes):
        cases = []
        for i, row in enumerate(testset, start=1):
            if isinstance(row, TestCase):
                cases.append(row)
                continue
            if not isinstance(row, Mapping):
                raise DataError(f"test case {i} is a {type(row).__name__}, not a mapping")
            try:
                cases.append(TestCase.model_validate(dict(row)))
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(p) for p in err["loc"])
                raise DataError(f"test case {i}: {field}: {err['msg']}") from None
        if not cases:
            raise DataError("the test set has no cases")
        return TestSet(name=name or "cases", documents=[], cases=cases)
    raise DataError(
        f"cannot read a test set from {type(testset).__name__}: pass a folder, a TestSet or a "
        "list of dicts with id, question, reference and relevant"
    )


def sweep(
    testset: Any,
    *,
    retriever: Any = "hybrid",
    generator: Any = "extractive",
    judges: Iterable[Any] | None = None,
    ks: Iterable[int] = range(1, 11),
    backend: str | None = None,
    options: Mapping[str, Any] | None = None,
    objective: Mapping[str, Any] | None = None,
    budget: Mapping[str, Any] | None = None,
    concurrency: int | None = None,
    store: Any = None,
    new: bool = False,
    tags: Mapping[str, str] | None = None,
    seed: int = 0,
    progress: Any = None,
) -> SweepResult:
    """Run (or resume) a k-sweep; see the module docstring. ``options`` are the judges'
    (``judges.options``: the cascade's band, given to every judge built by name); ``objective`` and
    ``budget`` take the sweep config's keys (``docs/sweep.md``); ``store`` is a ``RunStore``, a
    path or a store URL; ``new=True`` starts a new run even when an unfinished one with the
    same identity exists; ``progress`` receives one line per phase."""
    from ragjudge.adapters import FunctionRetriever, run_sync
    from ragjudge.api.evaluate import DEFAULT_JUDGES
    from ragjudge.judges.base import conform
    from ragjudge.judges.registry import default_backend
    from ragjudge.llm.settings import resolve_concurrency
    from ragjudge.store import RunStore, open_store
    from ragjudge.sweep.config import parse_config
    from ragjudge.sweep.run import arun_sweep

    concurrency = resolve_concurrency(concurrency)
    ts = as_testset(testset)
    specs = list(judges) if judges is not None else list(DEFAULT_JUDGES)
    chosen = backend or default_backend()
    given_judges = {j.name: j for j in (conform(s) for s in specs if not isinstance(s, str))}
    names = [s if isinstance(s, str) else conform(s).name for s in specs]
    config = parse_config(
        {
            "dataset": {"path": ts.name},
            "judges": {"names": names, "backend": chosen, "options": dict(options or {})},
            "generator": {"kind": generator if generator in GENERATORS else "extractive"},
            "retriever": {"kind": retriever if retriever in RETRIEVERS else "hybrid"},
            "ks": list(ks),
            "seed": seed,
            **({"objective": dict(objective)} if objective else {}),
            **({"budget": dict(budget)} if budget else {}),
        },
        source="ragjudge.sweep()",
    ).model_copy(update={"concurrency": concurrency})  # the argument beats the environment
    comp = build_components(
        config,
        GivenParts(
            retriever=None if isinstance(retriever, str) and retriever in RETRIEVERS else retriever,
            generator=None if isinstance(generator, str) and generator in GENERATORS else generator,
            judges=given_judges,
            max_concurrency=concurrency,
        ),
    )
    if not ts.documents and not isinstance(comp.retriever, FunctionRetriever):
        raise ConfigError(
            "a built-in retriever needs a corpus: pass a folder or a TestSet with documents, "
            "or your own retriever function"
        )
    run_store = store if isinstance(store, RunStore) or store is None else open_store(store)
    return run_sync(
        lambda: arun_sweep(
            config,
            store=run_store,
            components=comp,
            testset=ts,
            new=new,
            tags=tags,
            progress=progress,
        )
    )
