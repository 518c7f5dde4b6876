"""Per-query scores of one run, by (metric, k): what the regression report compares.

A ``MetricSeries`` maps each query id to its score, or ``None`` when the query was in the run but
not scored (a judge status other than ok); queries absent from the map were not in the run.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ragjudge.judges.registry import JUDGE_NAMES
from ragjudge.schema import JudgeResult, RunManifest

Kind = Literal["judge", "retrieval"]


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
    results: dict[str, JudgeResult] = Field(default_factory=dict)
    """``result_key(judge, k, case_id)`` -> the judge result, with its evidence."""
    contexts: dict[str, list[str]] = Field(default_factory=dict)
    """``context_key(case_id, k)`` -> the ids of the top-k documents."""
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
        """Judges first in report order, then retrieval metrics alphabetically; then by k."""
        metric, k = key
        rank = JUDGE_NAMES.index(metric) if metric in JUDGE_NAMES else len(JUDGE_NAMES)
        return rank, metric, k


def result_key(judge: str, k: int, case_id: str) -> str:
    return f"{judge}|{k}|{case_id}"


def context_key(case_id: str, k: int) -> str:
    return f"{case_id}|{k}"
