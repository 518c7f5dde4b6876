"""The result of a retrieval evaluation and the bootstrap intervals of its means.

``bootstrap_columns`` gives, for every column of a (queries x metrics) matrix, exactly the
interval ``ragjudge.stats.bootstrap_ci`` gives for that column (the same seed draws the same
resamples), computed for all columns at once: each resample's means are ``counts @ values / n``
with ``counts`` the number of times each query was drawn.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragjudge.stats import DEFAULT_RESAMPLES


class MetricsReport(BaseModel):
    """Per-query values, means and 95% bootstrap intervals of the retrieval metrics.

    ``n_queries`` counts the evaluated (judged) queries, including those without a ranking,
    which score 0 (``queries_without_ranking`` of them). Run queries absent from the qrels are
    not evaluated (``ignored_run_queries``).
    """

    model_config = ConfigDict(extra="forbid")

    mean: dict[str, float]
    ci: dict[str, tuple[float, float]]
    per_query: dict[str, dict[str, float]]
    n_queries: int
    ks: list[int] = Field(default_factory=list)
    relevance_threshold: int = 1
    queries_without_ranking: int = 0
    ignored_run_queries: int = 0

    def to_json_dict(self) -> dict[str, Any]:
        """``{"metrics", "ci", "per_query", "n_queries"}`` plus the settings and counts."""
        return {
            "metrics": dict(self.mean),
            "ci": {k: [lo, hi] for k, (lo, hi) in self.ci.items()},
            "per_query": self.per_query,
            "n_queries": self.n_queries,
            "ks": list(self.ks),
            "relevance_threshold": self.relevance_threshold,
            "queries_without_ranking": self.queries_without_ranking,
            "ignored_run_queries": self.ignored_run_queries,
        }


def bootstrap_columns(
    values: np.ndarray,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[tuple[float, float]]:
    """Percentile bootstrap interval of each column's mean, equal to ``bootstrap_ci`` per column."""
    n, m = values.shape
    if n == 0:
        raise ValueError("bootstrap of an empty sample")
    if n == 1:
        return [(float(v), float(v)) for v in values[0]]
    rng = np.random.default_rng(seed)
    means = np.empty((n_resamples, m))
    step = max(1, 2_000_000 // n)  # the same chunks, hence the same draws, as bootstrap_ci
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        idx = rng.integers(0, n, size=(stop - start, n))
        flat = (idx + np.arange(stop - start)[:, None] * n).ravel()
        counts = np.bincount(flat, minlength=(stop - start) * n).reshape(stop - start, n)
        means[start:stop] = counts @ values / n
    alpha = 1.0 - confidence
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2], axis=0)
    return [(float(a), float(b)) for a, b in zip(lo, hi, strict=True)]
