"""The queries that moved most between two runs, with their evidence.

For every compared (metric, k) the per-query change is ``current - baseline`` (from the flagged
metrics when any metric was flagged, else from all; pooled and identical rows add nothing). A
query appears once, with all its moves (drops first); queries are ordered by their largest
change |delta|. Each move carries the claims of the current answer that are unsupported now
and were not before (judge metrics with claim evidence) and the relevant documents that left
the top k.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ragjudge.report.compare import Comparison
from ragjudge.report.runscores import RunScores
from ragjudge.schema import ClaimVerdict


class Move(BaseModel):
    metric: str
    k: int
    baseline: float
    current: float
    delta: float
    claims_lost: list[str] = Field(default_factory=list)
    """Claims of the current answer (or key points) that are not supported now and were
    supported in the baseline, or were not in the baseline's answer; quoted from the current
    answer, never from the baseline's."""
    claims_gained: list[str] = Field(default_factory=list)
    """Claims of the current answer supported now and not before (or new)."""
    left_top_k: list[str] = Field(default_factory=list)
    """Relevant documents in the baseline's top k that are not in the current top k."""
    entered_top_k: list[str] = Field(default_factory=list)


class MovedQuery(BaseModel):
    case_id: str
    question: str
    moves: list[Move]
    """Every move of this query, most negative delta first."""

    @property
    def largest(self) -> float:
        """The change of largest magnitude (negative for a drop)."""
        return max((m.delta for m in self.moves), key=abs)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _verdicts(run: RunScores, metric: str, k: int, case_id: str) -> dict[str, ClaimVerdict]:
    """Normalised claim text -> the claim's verdict, for a result with claim evidence."""
    r = run.results.get((metric, k, case_id))
    if r is None:
        return {}
    return {_norm(c.claim): c for c in (r.evidence.claims or r.evidence.key_points)}


def moved_queries(
    current: RunScores, baseline: RunScores, comparison: Comparison, *, n: int = 10
) -> list[MovedQuery]:
    """The ``n`` queries with the largest changes, each with all its moves."""
    flagged = [m for m in comparison.metrics if m.flagged]
    pool = [m for m in (flagged or comparison.metrics) if m.k is not None]
    cur_by, base_by = current.by_key(), baseline.by_key()
    moves: dict[str, list[Move]] = {}
    for m in pool:
        assert m.k is not None
        cur, base = cur_by[(m.metric, m.k)].values, base_by[(m.metric, m.k)].values
        for case_id in set(cur) & set(base):
            c, b = cur[case_id], base[case_id]
            if c is None or b is None or c == b:
                continue
            moves.setdefault(case_id, []).append(
                _move(current, baseline, m.metric, m.k, case_id, b, c)
            )
    queries = [
        MovedQuery(
            case_id=case_id,
            question=current.questions.get(case_id) or baseline.questions.get(case_id, ""),
            moves=sorted(ms, key=lambda x: (x.delta, RunScores.sort_key((x.metric, x.k)))),
        )
        for case_id, ms in moves.items()
    ]
    queries.sort(key=lambda q: (-abs(q.largest), q.largest, q.case_id))
    return queries[:n]


def _move(
    current: RunScores, baseline: RunScores, metric: str, k: int, case_id: str, b: float, c: float
) -> Move:
    mover = Move(metric=metric, k=k, baseline=b, current=c, delta=c - b)
    was, now = _verdicts(baseline, metric, k, case_id), _verdicts(current, metric, k, case_id)
    if was and now:
        mover.claims_lost = sorted(
            c.claim
            for x, c in now.items()
            if c.verdict != "supported" and (x not in was or was[x].verdict == "supported")
        )
        mover.claims_gained = sorted(
            c.claim
            for x, c in now.items()
            if c.verdict == "supported" and (x not in was or was[x].verdict != "supported")
        )
    before = baseline.contexts.get((case_id, k))
    after = current.contexts.get((case_id, k))
    if before is not None and after is not None:
        relevant = current.relevant.get(case_id) or baseline.relevant.get(case_id) or {}
        mover.left_top_k = [d for d in before if d not in after and relevant.get(d, 0) > 0]
        mover.entered_top_k = [d for d in after if d not in before and relevant.get(d, 0) > 0]
    return mover
