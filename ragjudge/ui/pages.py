"""The data of the ``ragjudge ui`` pages, read from a run store: a run's analysis from its
stored digest (``ragjudge.sweep.digest``, computed once per run), a page of cases through
``RunStore.find_cases`` and a case through ``RunView`` of that case only; the label pages read
the whole run (``run_data``), kept while the run's status, end time and row counts
stay the same (a run resumed and finished again, with a judge more, is read again).

A run or case the request names that is not in the store is a ``NotFoundError`` (HTTP 404).

A running run's digest changes with every batch written: it is computed when asked and kept
in this process while the run's row counts stay the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from threading import Lock
from typing import Any

from pydantic import BaseModel, Field

from ragjudge.calibrate.source import RunData, from_view
from ragjudge.errors import ConfigError, RagjudgeError
from ragjudge.schema import Answer, JudgeResult, RunManifest
from ragjudge.store import CaseQuery, RunStore
from ragjudge.store.view import RunView
from ragjudge.sweep.digest import RunDigest, digests
from ragjudge.sweep.render import RunSummary, run_summary


class NotFoundError(RagjudgeError):
    """A run or case a request names is not in the store (HTTP 404)."""


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
    before: str | None = None
    """The claim's verdict in the baseline (same judge, k and claim text) when it differs:
    the claim flipped."""


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
    baseline: str | None = None
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


def _judge_cell(
    judge: str, r: JudgeResult, answer: Answer | None, before: JudgeResult | None
) -> JudgeCell:
    """A judge's result; with the baseline's result ``before``, each claim whose verdict
    differs there carries the old verdict."""

    def flips(rows: Sequence[Any], old: Sequence[Any]) -> list[ClaimRow]:
        was = {c.claim: c.verdict for c in old}
        return [
            c.model_copy(update={"before": was[c.claim]})
            if was.get(c.claim, c.verdict) != c.verdict
            else c
            for c in _claims(rows, answer)
        ]

    old = before.evidence if before is not None else None
    return JudgeCell(
        judge=judge,
        score=r.score,
        status=r.status.value,
        explanation=r.evidence.explanation,
        version=r.judge_version,
        claims=flips(r.evidence.claims, old.claims if old else []),
        key_points=flips(r.evidence.key_points, old.key_points if old else []),
    )


class Pages:
    """The read side of the app over one run store (module docstring)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._lock = Lock()
        self._whole: dict[str, tuple[tuple[Any, ...], RunData]] = {}
        self._live: dict[str, tuple[tuple[int, ...], RunDigest]] = {}

    def resolve(self, ref: str) -> str:
        """``RunStore.resolve``; a reference no run id starts with (or ``latest`` in an empty
        store) is a ``NotFoundError``, an ambiguous one stays a ``ConfigError``."""
        try:
            return self.store.resolve(ref)
        except ConfigError as exc:
            if any(m.run_id.startswith(ref) for m in self.store.list_runs()):
                raise
            raise NotFoundError(str(exc)) from None

    def manifest(self, ref: str) -> RunManifest:
        return self.store.manifest(self.resolve(ref))

    def run_data(self, run_id: str) -> RunData:
        """The whole run as calibration reads it (the label and agreement pages; module
        docstring for how long it is kept)."""
        m = self.store.manifest(run_id)
        key = (m.status, m.finished_at, *self.store.counts(run_id).values())
        with self._lock:
            kept = self._whole.get(run_id)
        if kept is None or kept[0] != key:
            kept = (key, from_view(RunView.read(self.store, run_id)))
            with self._lock:
                self._whole[run_id] = kept
        return kept[1]

    def digests(self, run_ids: Sequence[str]) -> dict[str, RunDigest]:
        """run id -> its digest (module docstring for a running run)."""
        running = {m.run_id for m in self.store.list_runs() if m.status == "running"} & set(run_ids)
        out = digests(self.store, [r for r in run_ids if r not in running])
        now = self.store.run_counts(running)
        for run_id in running:
            counts = tuple(now[run_id].values())
            with self._lock:
                live = self._live.get(run_id)
            if live is None or live[0] != counts:
                live = (counts, digests(self.store, [run_id])[run_id])
                with self._lock:
                    self._live[run_id] = live
            out[run_id] = live[1]
        return out

    def digest(self, run_id: str) -> RunDigest:
        return self.digests([run_id])[run_id]

    def run_summary(self, run_id: str) -> RunSummary:
        d = self.digest(run_id)
        summary = d.summary.model_copy(update={"manifest": self.store.manifest(run_id)})
        return run_summary(summary)

    def runs(self, *, q: str = "", status: str = "", sort: str = "started") -> list[RunRow]:
        """Every run (filtered by text in id, dataset or tags, and by status), sorted; a
        running run shows its counts only (its digest is computed on its own page)."""
        shown = []
        for m in self.store.list_runs():
            tags = " ".join(f"{t}={v}" for t, v in m.tags.items())
            if q and q.lower() not in f"{m.run_id} {m.dataset_name} {tags}".lower():
                continue
            if status and m.status != status:
                continue
            shown.append(m)
        done = digests(self.store, [m.run_id for m in shown if m.status != "running"])
        rows = []
        every = self.store.run_counts([m.run_id for m in shown])
        for m in shown:
            counts = every[m.run_id]
            d = done.get(m.run_id)
            rows.append(
                RunRow(
                    run_id=m.run_id,
                    status=m.status,
                    tags=m.tags,
                    dataset=m.dataset_name,
                    config_hash=m.config_hash,
                    started_at=m.started_at,
                    cost_usd=d.cost_usd if d is not None else 0.0,
                    answers=counts["answers"],
                    judged=counts["judge_results"],
                    coverage=d.coverage if d is not None else None,
                    best_k=d.summary.choice.best_k if d is not None else None,
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

    def statuses(self, run_id: str) -> dict[str, dict[str, int]]:
        """judge -> status -> count over every stored result."""
        return self.digest(run_id).statuses

    def case(self, run_id: str, case_id: str, baseline: str | None = None) -> CasePage:
        """One case at every k, read alone; with ``baseline``, the claims that flipped. A case
        the run does not hold is a ``NotFoundError``."""
        view = RunView.read(self.store, run_id, case_ids=[case_id])
        if case_id not in view.testcases and not view.answers and not view.results:
            raise NotFoundError(f"no case {case_id!r} in run {run_id}")
        base = RunView.read(self.store, baseline, case_ids=[case_id]) if baseline else None
        tc = view.testcases.get(case_id)
        relevant = dict(tc.relevant) if tc is not None else {}
        ranking = view.rankings.get(case_id)
        judges, metrics = view.judges, view.retrieval_metrics
        ks = sorted({k for (_, k) in view.answers})
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
                        _judge_cell(
                            j,
                            view.results[(j, k, case_id)],
                            answer,
                            base.results.get((j, k, case_id)) if base is not None else None,
                        )
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
            baseline=baseline,
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
        first judge) moved, largest drop first. Only the page shown is read."""
        d = self.digest(run_id)
        judges, ks = list(d.statuses), d.summary.ks
        if k is None:
            best = d.summary.choice.best_k if d.results else None
            k = best if best is not None else (ks[-1] if ks else 0)
        focus = judge or (judges[0] if judges else "")
        query = CaseQuery(
            k=k, judge=focus, text=q, status=status, lo=lo, hi=hi, baseline=baseline, limit=per_page
        )
        at = max(page, 1)
        total, hits = self.store.find_cases(
            run_id, query.model_copy(update={"offset": (at - 1) * per_page})
        )
        pages = max(1, -(-total // per_page))
        if at > pages:  # past the end: the last page
            at = pages
            total, hits = self.store.find_cases(
                run_id, query.model_copy(update={"offset": (at - 1) * per_page})
            )
        questions = self.store.cases(run_id, case_ids=[h.case_id for h in hits])
        rows = [
            CaseRow(
                case_id=h.case_id,
                question=questions[h.case_id].question if h.case_id in questions else "",
                scores={j: h.scores.get(j) for j in judges},
                statuses={j: h.statuses.get(j, "missing") for j in judges},
                moved=h.moved,
            )
            for h in hits
        ]
        return Explorer(
            run_id=run_id,
            k=k,
            ks=ks,
            judges=judges,
            rows=rows,
            total=total,
            page=at,
            pages=pages,
        )
