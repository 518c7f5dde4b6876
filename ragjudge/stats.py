"""Shared resampling statistics: every aggregate in ragjudge carries its uncertainty.

- ``bootstrap_ci``: percentile bootstrap of the mean, B resamples of n values with replacement;
  the interval is the (alpha/2, 1 - alpha/2) quantiles of the resampled means.
- ``paired_bootstrap``: the same over per-item differences ``a_i - b_i`` of two systems on the
  same items (the pairing removes between-item variance).
- ``paired_permutation_p``: two-sided sign-flip permutation test of mean(a - b) = 0; the p-value
  is (1 + #{|mean(s * d)| >= |mean(d)|}) / (1 + B) over random signs s.
- ``aggregate``: ``mean ± CI (n scored / n total)`` of judge scores, with status counts.

All are deterministic for a given ``seed``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from ragjudge.schema import Aggregate, JudgeResult

DEFAULT_RESAMPLES = 2000


def _as_array(values: Iterable[float]) -> np.ndarray:
    arr = np.asarray(list(values), dtype=float)
    if arr.ndim != 1:
        raise ValueError("expected a flat sequence of numbers")
    if np.isnan(arr).any():
        raise ValueError("NaN in input: drop unscored items and report coverage instead")
    return arr


def bootstrap_ci(
    values: Iterable[float],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean. One value gives a zero-width interval."""
    arr = _as_array(values)
    if arr.size == 0:
        raise ValueError("bootstrap of an empty sample")
    if arr.size == 1:
        return float(arr[0]), float(arr[0])
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    # Chunked so that memory stays bounded for large n.
    step = max(1, 2_000_000 // arr.size)
    for start in range(0, n_resamples, step):
        stop = min(n_resamples, start + step)
        idx = rng.integers(0, arr.size, size=(stop - start, arr.size))
        means[start:stop] = arr[idx].mean(axis=1)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean of ``a - b`` over paired items with its percentile bootstrap interval."""
    d = _as_array(a) - _as_array(b)
    lo, hi = bootstrap_ci(d, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return float(d.mean()), lo, hi


def paired_permutation_p(
    a: Sequence[float], b: Sequence[float], *, n_resamples: int = 10_000, seed: int = 0
) -> float:
    """Two-sided sign-flip permutation p-value for mean(a - b) = 0."""
    d = _as_array(a) - _as_array(b)
    if d.size == 0:
        raise ValueError("permutation test of an empty sample")
    observed = abs(d.mean())
    if observed == 0.0:
        return 1.0
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_resamples, d.size))
    null = np.abs((signs * d).mean(axis=1))
    return float((1 + np.count_nonzero(null >= observed - 1e-12)) / (1 + n_resamples))


def aggregate_scores(
    scores: Sequence[float | None],
    statuses: Sequence[str] | None = None,
    *,
    seed: int = 0,
) -> Aggregate:
    """Mean, bootstrap CI and coverage of possibly-missing scores (None = not scored)."""
    scored = [s for s in scores if s is not None]
    counts = Counter(statuses) if statuses is not None else Counter()
    if not scored:
        return Aggregate(
            mean=None,
            ci_low=None,
            ci_high=None,
            n_scored=0,
            n_total=len(scores),
            status_counts=dict(counts),
        )
    lo, hi = bootstrap_ci(scored, seed=seed)
    return Aggregate(
        mean=float(np.mean(scored)),
        ci_low=lo,
        ci_high=hi,
        n_scored=len(scored),
        n_total=len(scores),
        status_counts=dict(counts),
    )


def aggregate(results: Sequence[JudgeResult], *, seed: int = 0) -> Aggregate:
    """``aggregate_scores`` over judge results, counting each status."""
    return aggregate_scores(
        [r.score for r in results], [r.status.value for r in results], seed=seed
    )
