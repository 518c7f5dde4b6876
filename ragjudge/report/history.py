"""The trend of headline metrics over the last runs of the store.

A headline metric is a judge score (or a retrieval metric) at the report's headline k; each
point is that run's mean with its 95% bootstrap interval and its coverage.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from ragjudge.report.runscores import RunScores
from ragjudge.stats import aggregate_scores


class HistoryPoint(BaseModel):
    run_id: str
    started_at: str
    metric: str
    k: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    coverage: float


def history_points(
    runs: Sequence[RunScores], metrics: Sequence[tuple[str, int]]
) -> list[HistoryPoint]:
    """One point per run (oldest first) and headline (metric, k) the run has."""
    points = []
    for run in runs:
        by = run.by_key()
        started = run.manifest.started_at if run.manifest else ""
        for key in metrics:
            series = by.get(key)
            if series is None:
                continue
            agg = aggregate_scores(list(series.values.values()))
            points.append(
                HistoryPoint(
                    run_id=run.run_id,
                    started_at=started,
                    metric=key[0],
                    k=key[1],
                    mean=agg.mean,
                    ci_low=agg.ci_low,
                    ci_high=agg.ci_high,
                    coverage=agg.coverage,
                )
            )
    return points
