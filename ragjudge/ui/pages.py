"""The data of the ``ragjudge ui`` pages, read from a run store through ``RunView`` (the one
reader of a stored run) and the sweep and report models the files use.

A run's view and its sweep summary are cached per (run id, status): a finished run never
changes, a running one is re-read when its status changes. Case pages read the cached view.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from threading import Lock
from typing import Any

from pydantic import BaseModel, Field

from ragjudge.schema import Answer, JudgeResult, RunManifest
from ragjudge.store import RunStore
from ragjudge.store.view import RunView
from ragjudge.sweep.analysis import SweepSummary
from ragjudge.sweep.render import RunSummary, run_summary


class RunRow(BaseModel):
    """One line of the runs page."""

    run_id: str
    status: str
    tags: dict[str, str]
    dataset: str
    config_hash: str
    started_at: str
    cost_usd: float
    answers: int
    judged: int
    coverage: float | None
    """Judge results with a score / judge results stored."""
    best_k: int | None = None
    """Filled for the rows shown (``Pages.best_k``): choosing k analyses the whole run."""


class Doc(BaseModel):
    """A retrieved document at one k: its rank, id, relevance grade and text (when the
    answer at that k carries it)."""

    rank: int
    doc_id: str
    grade: int | None
    text: str | None = None


class ClaimRow(BaseModel):
    claim: str
    verdict: str
    supporting: list[str]
    """Ids of the context chunks that support (or, for a contradicted claim, contradict) it."""


class JudgeCell(BaseModel):
    judge: str
    score: float | None
    status: str
    explanation: str | None
    version: str
    claims: list[ClaimRow] = Field(default_factory=list)
    key_points: list[ClaimRow] = Field(default_factory=list)


class CaseAtK(BaseModel):
    k: int
    docs: list[Doc]
    answer: str | None
    abstained: bool = False
    judges: list[JudgeCell]
    retrieval: dict[str, float]


class CasePage(BaseModel):
    run_id: str
    case_id: str
    question: str
    reference: str | None
    relevant: dict[str, int]
    columns: list[CaseAtK]


class CaseRow(BaseModel):
    """One line of the case explorer: a case's scores at the shown k."""

    case_id: str
    question: str
    scores: dict[str, float | None]
    statuses: dict[str, str]
    moved: float | None = None
    """current - baseline of the sort judge at the shown k (with a baseline)."""


class Explorer(BaseModel):
    run_id: str
    k: int
    ks: list[int]
    judges: list[str]
    rows: list[CaseRow]
    total: int
    page: int
    pages: int


def _claims(rows: Sequence[Any], answer: Answer | None) -> list[ClaimRow]:
    ids = answer.context_ids if answer is not None else []
    return [
        ClaimRow(
            claim=c.claim,
            verdict=c.verdict,
            supporting=[ids[i] if i < len(ids) else f"#{i}" for i in c.supporting_chunks],
        )
        for c in rows
    ]


def _judge_cell(judge: str, r: JudgeResult, answer: Answer | None) -> JudgeCell:
    return JudgeCell(
        judge=judge,
        score=r.score,
        status=r.status.value,
        explanation=r.evidence.explanation,
        version=r.judge_version,
        claims=_claims(r.evidence.claims, answer),
        key_points=_claims(r.evidence.key_points, answer),
    )


class Pages:
    """The read side of the app over one run store (module docstring)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._lock = Lock()
        self._views: dict[tuple[str, str], RunView] = {}
        self._summaries: dict[tuple[str, str], SweepSummary] = {}
        self._index: dict[tuple[str, str], tuple[list[str], list[str], list[int], list[str]]] = {}

    def manifest(self, ref: str) -> RunManifest:
        return self.store.manifest(self.store.resolve(ref))

    def view(self, run_id: str) -> RunView:
        key = (run_id, self.store.manifest(run_id).status)
        with self._lock:
            if key not in self._views:
                self._views[key] = RunView.read(self.store, run_id)
            return self._views[key]

    def index(self, run_id: str) -> tuple[list[str], list[str], list[int], list[str]]:
        """The run's case ids, judges, ks and retrieval metrics (each a pass over the run, so
        cached)."""
        key = (run_id, self.store.manifest(run_id).status)
        with self._lock:
            cached = self._index.get(key)
        if cached is None:
            view = self.view(run_id)
            ks = sorted({k for (_, k) in view.answers})
            cached = (view.cases, view.judges, ks, view.retrieval_metrics)
            with self._lock:
                self._index[key] = cached
        return cached

    def summary(self, run_id: str) -> SweepSummary:
        """The run's sweep summary, as ``ragjudge runs show`` computes it."""
        from ragjudge.sweep.analysis import analyse
        from ragjudge.sweep.config import stored_config

        m = self.store.manifest(run_id)
        key = (run_id, m.status)
        with self._lock:
            cached = self._summaries.get(key)
        if cached is not None:
            return cached
        cfg = stored_config(m)
        s = analyse(
            self.view(run_id),
            ks=cfg.ks,
            judges=cfg.judges.names,
            objective=cfg.objective,
            seed=cfg.seed,
        )
        with self._lock:
            self._summaries[key] = s
        return s

    def run_summary(self, run_id: str) -> RunSummary:
        return run_summary(self.summary(run_id))

    def runs(self, *, q: str = "", status: str = "", sort: str = "started") -> list[RunRow]:
        """Every run (filtered by text in id, dataset or tags, and by status), sorted."""
        rows = []
        for m in self.store.list_runs():
            tags = " ".join(f"{t}={v}" for t, v in m.tags.items())
            if q and q.lower() not in f"{m.run_id} {m.dataset_name} {tags}".lower():
                continue
            if status and m.status != status:
                continue
            counts = self.store.counts(m.run_id)
            view = self.view(m.run_id)
            scored = sum(r.score is not None for r in view.results.values())
            rows.append(
                RunRow(
                    run_id=m.run_id,
                    status=m.status,
                    tags=m.tags,
                    dataset=m.dataset_name,
                    config_hash=m.config_hash,
                    started_at=m.started_at,
                    cost_usd=sum(e.cost_usd for e in self.store.ledger(m.run_id)),
                    answers=counts["answers"],
                    judged=counts["judge_results"],
                    coverage=scored / len(view.results) if view.results else None,
                )
            )
        key = {
            "started": lambda r: r.started_at,
            "status": lambda r: r.status,
            "dataset": lambda r: r.dataset,
            "cost": lambda r: r.cost_usd,
            "coverage": lambda r: r.coverage or 0.0,
        }.get(sort.lstrip("-"), lambda r: r.started_at)
        return sorted(rows, key=key, reverse=sort.startswith("-") or sort == "started")

    def best_k(self, row: RunRow) -> RunRow:
        """The row with its chosen k (finished runs with judge results)."""
        if row.status != "finished" or not row.judged:
            return row
        return row.model_copy(update={"best_k": self.summary(row.run_id).choice.best_k})

    def statuses(self, run_id: str) -> dict[str, dict[str, int]]:
        """judge -> status -> count over every stored result."""
        out: dict[str, Counter[str]] = defaultdict(Counter)
        for (judge, _, _), r in self.view(run_id).results.items():
            out[judge][r.status.value] += 1
        return {j: dict(c) for j, c in sorted(out.items())}

    def case(self, run_id: str, case_id: str) -> CasePage:
        view = self.view(run_id)
        tc = view.testcases.get(case_id)
        relevant = dict(tc.relevant) if tc is not None else {}
        ranking = view.rankings.get(case_id)
        _, judges, all_ks, metrics = self.index(run_id)
        ks = [k for k in all_ks if (case_id, k) in view.answers]
        columns = []
        for k in ks:
            answer = view.answers.get((case_id, k))
            texts = dict(zip(answer.context_ids, answer.contexts, strict=False)) if answer else {}
            docs = [
                Doc(
                    rank=i + 1,
                    doc_id=d.doc_id,
                    grade=relevant.get(d.doc_id),
                    text=texts.get(d.doc_id),
                )
                for i, d in enumerate(ranking.docs[:k] if ranking is not None else [])
            ]
            if not docs and answer is not None:
                docs = [
                    Doc(rank=i + 1, doc_id=d, grade=relevant.get(d), text=t)
                    for i, (d, t) in enumerate(
                        zip(answer.context_ids, answer.contexts, strict=False)
                    )
                ]
            columns.append(
                CaseAtK(
                    k=k,
                    docs=docs,
                    answer=answer.text if answer is not None else None,
                    abstained=answer.abstained if answer is not None else False,
                    judges=[
                        _judge_cell(j, view.results[(j, k, case_id)], answer)
                        for j in judges
                        if (j, k, case_id) in view.results
                    ],
                    retrieval={
                        m: view.retrieval[(m, k, case_id)]
                        for m in metrics
                        if (m, k, case_id) in view.retrieval
                    },
                )
            )
        return CasePage(
            run_id=run_id,
            case_id=case_id,
            question=tc.question if tc is not None else "",
            reference=tc.reference if tc is not None else None,
            relevant=relevant,
            columns=columns,
        )

    def explorer(
        self,
        run_id: str,
        *,
        k: int | None = None,
        q: str = "",
        status: str = "",
        judge: str = "",
        lo: float | None = None,
        hi: float | None = None,
        baseline: str | None = None,
        page: int = 1,
        per_page: int = 50,
    ) -> Explorer:
        """The cases of a run at one k (default: the chosen k), filtered by text, by a judge's
        status and score range; with a baseline, sorted by how far ``judge`` (default: the
        first judge) moved, largest drop first."""
        view = self.view(run_id)
        cases, judges, ks, _ = self.index(run_id)
        if k is None:
            best = self.summary(run_id).choice.best_k if view.results else None
            k = best if best is not None else (ks[-1] if ks else 0)
        focus = judge or (judges[0] if judges else "")
        base_view = self.view(baseline) if baseline else None
        questions = view.questions
        rows = []
        for case_id in cases:
            question = questions.get(case_id, "")
            if q and q.lower() not in f"{case_id} {question}".lower():
                answer = view.answers.get((case_id, k))
                if answer is None or q.lower() not in answer.text.lower():
                    continue
            results = {j: view.results.get((j, k, case_id)) for j in judges}
            scores = {j: (r.score if r is not None else None) for j, r in results.items()}
            statuses = {
                j: (r.status.value if r is not None else "missing") for j, r in results.items()
            }
            if status and statuses.get(focus) != status:
                continue
            s = scores.get(focus)
            if lo is not None and (s is None or s < lo):
                continue
            if hi is not None and (s is None or s > hi):
                continue
            moved = None
            if base_view is not None:
                b = base_view.results.get((focus, k, case_id))
                if b is not None and b.score is not None and s is not None:
                    moved = s - b.score
            rows.append(
                CaseRow(
                    case_id=case_id,
                    question=question,
                    scores=scores,
                    statuses=statuses,
                    moved=moved,
                )
            )
        if base_view is not None:
            rows.sort(
                key=lambda r: (r.moved is None, r.moved if r.moved is not None else 0.0, r.case_id)
            )
        pages = max(1, -(-len(rows) // per_page))
        page = min(max(page, 1), pages)
        return Explorer(
            run_id=run_id,
            k=k,
            ks=ks,
            judges=judges,
            rows=rows[(page - 1) * per_page : page * per_page],
            total=len(rows),
            page=page,
            pages=pages,
        )
