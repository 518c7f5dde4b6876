"""Per-query scores of one run, by (metric, k): what the regression report compares.

A ``MetricSeries`` maps each query id to its score, or ``None`` when the query was in the run but
not scored (a judge status other than ok); queries absent from the map were not in the run.

The ``objective`` series is the sweep's per-query objective without its cost penalty (see
``ragjudge.sweep.analysis``): O(q, k) = sum_m w_m * s_m(q, k) / sum_{m scored} w_m over the
metrics scored for q at k; ``None`` when none of them was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field

from ragjudge.judges.registry import JUDGE_NAMES
from ragjudge.schema import JudgeResult, RunManifest

Kind = Literal["judge", "retrieval", "objective"]


class MetricSeries(BaseModel):
    metric: str
    k: int
    kind: Kind
    values: dict[str, float | None]
    version: str | None = None
    """The judge version (judges only): runs judged by different versions are not comparable."""

    @property
    def coverage(self) -> float:
        if not self.values:
            return 0.0
        return sum(v is not None for v in self.values.values()) / len(self.values)


class RunScores(BaseModel):
    """A run's scores plus the evidence the report shows for the queries that moved."""

    run_id: str
    manifest: RunManifest | None = None
    series: list[MetricSeries] = Field(default_factory=list)
    questions: dict[str, str] = Field(default_factory=dict)
    """Query id -> question text."""
    results: dict[tuple[str, int, str], JudgeResult] = Field(default_factory=dict)
    """(judge, k, case id) -> the judge result, with its evidence (``RunView.results``)."""
    contexts: dict[tuple[str, int], list[str]] = Field(default_factory=dict)
    """(case id, k) -> the ids of the top-k documents."""
    relevant: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Query id -> relevant document id -> grade (the qrels, when known)."""

    def by_key(self) -> dict[tuple[str, int], MetricSeries]:
        return {(s.metric, s.k): s for s in self.series}

    def metric_names(self) -> set[str]:
        return {s.metric for s in self.series}

    def judge_versions(self) -> dict[str, str]:
        return {s.metric: s.version for s in self.series if s.kind == "judge" and s.version}

    @staticmethod
    def sort_key(key: tuple[str, int]) -> tuple[int, str, int]:
        """Judges first in report order, the objective, then the other metrics alphabetically;
        then by k."""
        metric, k = key
        order = (*JUDGE_NAMES, "objective")
        rank = order.index(metric) if metric in order else len(order)
        return rank, metric, k


def objective_weights(run: RunScores) -> dict[str, float]:
    """The run's objective weights (its sweep config), else equal weights over its judges."""
    config = run.manifest.config if run.manifest is not None else {}
    weights = ((config.get("full") or {}).get("objective") or {}).get("weights")
    if weights:
        return {str(m): float(w) for m, w in weights.items() if float(w) > 0}
    return {s.metric: 1.0 for s in run.series if s.kind == "judge"}


def add_objective(run: RunScores, weights: Mapping[str, float]) -> None:
    """Append the ``objective`` series at every k (module docstring) when it combines at least
    two of the run's metrics (with one it would repeat that metric)."""
    by = run.by_key()
    names = [m for m in weights if m in run.metric_names()]
    if len(names) < 2:
        return
    for k in sorted({k for m, k in by if m in names}):
        parts = [by[(m, k)] for m in names if (m, k) in by]
        values: dict[str, float | None] = {}
        for case in sorted(set().union(*(p.values for p in parts))):
            scored = [
                (weights[p.metric], v) for p in parts if (v := p.values.get(case)) is not None
            ]
            den = sum(w for w, _ in scored)
            values[case] = sum(w * v for w, v in scored) / den if den else None
        run.series.append(MetricSeries(metric="objective", k=k, kind="objective", values=values))
