"""One typed view of a stored run: the one reader of the run store that the sweep summary, the
regression report, calibration and export all read.

Tables are keyed by tuples, never by composed strings: answers by ``(case_id, k)``, judge
results by ``(judge, k, case_id)``, retrieval metrics by ``(metric, k, case_id)``, rankings by
case id. ``RunView.read(store, run_id)`` reads a run; ``RunView.from_rows`` builds the same view
from rows (tests, or rows read elsewhere).
"""

from __future__ import annotations

import gc
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ragjudge.schema import Answer, Ranking, RunManifest, RunModels, TestCase
from ragjudge.store.base import RetrievalMetric, RunStore, StoredJudgeResult
from ragjudge.store.rows import JudgeResults


@dataclass(frozen=True)
class RunView:
    """A run as stored (module docstring)."""

    run_id: str
    manifest: RunManifest | None = None
    answers: dict[tuple[str, int], Answer] = field(default_factory=dict)
    results: JudgeResults = field(default_factory=lambda: JudgeResults.of({}))
    """(judge, k, case id) -> the judge result, with its evidence, parsed on first access;
    ``results.scores`` / ``results.statuses`` read the columns without parsing (a corrupt row
    is found when it is parsed: ``validate``)."""
    retrieval: dict[tuple[str, int, str], float] = field(default_factory=dict)
    """(metric, k, case id) -> the retrieval metric's value."""
    rankings: dict[str, Ranking] = field(default_factory=dict)
    """case id -> its ranking at the largest k."""
    testcases: dict[str, TestCase] = field(default_factory=dict)
    """case id -> the test case (question, reference, qrels) the run was asked; empty for a
    run stored before test cases were."""

    @classmethod
    def read(
        cls, store: RunStore, run_id: str, *, case_ids: Collection[str] | None = None
    ) -> RunView:
        """The stored run ``run_id`` (a full id); with ``case_ids``, only those cases' rows (a
        case page). Judge results are kept as stored and parsed on access (``results``). The
        cyclic garbage collector pauses while the rows are read: hundreds of thousands of new
        objects would otherwise trigger full collections that cost more than the reading
        (bench/bench_store.py)."""
        with _collector_paused():
            return cls._read(store, run_id, case_ids)

    @classmethod
    def _read(cls, store: RunStore, run_id: str, case_ids: Collection[str] | None) -> RunView:
        return cls.from_rows(
            run_id,
            manifest=store.manifest(run_id),
            answers=store.answers(run_id, case_ids=case_ids),
            results=store.judge_result_rows(run_id, case_ids=case_ids),
            retrieval=store.retrieval_metrics(run_id, case_ids=case_ids),
            rankings=store.rankings(run_id, case_ids=case_ids),
            testcases=store.cases(run_id, case_ids=case_ids).values(),
        )

    @classmethod
    def from_rows(
        cls,
        run_id: str,
        *,
        manifest: RunManifest | None = None,
        answers: Iterable[Answer] = (),
        results: Iterable[StoredJudgeResult] | JudgeResults = (),
        retrieval: Iterable[RetrievalMetric] = (),
        rankings: Mapping[str, Ranking] | None = None,
        testcases: Iterable[TestCase] = (),
    ) -> RunView:
        return cls(
            run_id=run_id,
            manifest=manifest,
            answers={(a.case_id, a.k): a for a in answers},
            results=results
            if isinstance(results, JudgeResults)
            else JudgeResults.of({(r.judge, r.k, r.case_id): r.result for r in results}, run_id),
            retrieval={(m.metric, m.k, m.case_id): m.value for m in retrieval},
            rankings=dict(rankings or {}),
            testcases={c.id: c for c in testcases},
        )

    @property
    def cases(self) -> list[str]:
        """Every case id with an answer or a judge result, sorted."""
        return sorted({c for c, _ in self.answers} | {c for _, _, c in self.results})

    @property
    def questions(self) -> dict[str, str]:
        """case id -> question text (stored test cases)."""
        return {c: t.question for c, t in self.testcases.items()}

    @property
    def references(self) -> dict[str, str]:
        """case id -> reference answer, for the cases that have one."""
        return {c: t.reference for c, t in self.testcases.items() if t.reference}

    @property
    def judges(self) -> list[str]:
        """The judges with at least one stored result, sorted."""
        return sorted({j for j, _, _ in self.results})

    @property
    def configured_judges(self) -> list[str]:
        """The judges the run was configured with (its manifest's sweep config:
        ``judges.names``, then the criteria judges), each once, as given: an import path stays
        one (its judge's name is known only once loaded). Empty for a run stored without a sweep
        config."""
        judges = self._config.get("judges")
        if not isinstance(judges, dict):
            return []
        names = [str(n) for n in judges.get("names") or []]
        return list(dict.fromkeys([*names, *map(str, judges.get("criteria") or {})]))

    @property
    def configured_ks(self) -> list[int]:
        """The ks the run was configured with (its manifest's sweep config), sorted; empty for a
        run stored without a sweep config."""
        return sorted({int(k) for k in self._config.get("ks") or []})

    @property
    def _config(self) -> dict[str, Any]:
        """The manifest's sweep config as stored (``config["full"]``; empty when none)."""
        full = self.manifest.config.get("full") if self.manifest is not None else None
        return full if isinstance(full, dict) else {}

    @property
    def retrieval_metrics(self) -> list[str]:
        """The retrieval metrics stored, sorted."""
        return sorted({m for m, _, _ in self.retrieval})

    @property
    def retrieved_max(self) -> int | None:
        """The most documents the retriever returned for one query (None: no rankings)."""
        return max((len(r.docs) for r in self.rankings.values()), default=None)

    def validate(self) -> None:
        """Parse every stored judge result (``CorruptRowError`` at the first that does not);
        the other tables are parsed when read."""
        self.results.validate()

    @property
    def models(self) -> RunModels:
        """The models the run used (an empty record without a manifest)."""
        return self.manifest.used_models() if self.manifest is not None else RunModels()


@contextmanager
def _collector_paused() -> Iterator[None]:
    """``gc`` disabled for the block (re-enabled after, if it was on)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
