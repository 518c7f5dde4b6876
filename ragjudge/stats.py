"""Shared resampling statistics: every aggregate in ragjudge carries its uncertainty.

- ``bootstrap_ci``: percentile bootstrap of the mean, B resamples of n values with replacement;
  the interval is the (alpha/2, 1 - alpha/2) quantiles of the resampled means.
- ``paired_bootstrap``: the same over per-item differences ``a_i - b_i`` of two systems on the
  same items (the pairing removes between-item variance).
- ``paired_permutation_p``: two-sided sign-flip permutation test of mean(a - b) = 0 over the
  m non-zero differences (a zero difference is the same under either sign): exact over all 2^m
  sign vectors when m <= 12, else (1 + #{|sum(s * d)| >= |sum(d)|}) / (1 + B) over B random s.
- ``holm`` / ``benjamini_hochberg``: adjusted p-values controlling the family-wise error rate
  (Holm's step-down) or the false discovery rate (Benjamini-Hochberg's step-up).
- ``paired_mde``: the minimum detectable effect of a paired test at a given power.
- ``aggregate``: ``mean ± CI (n scored / n total)`` of judge scores, with status counts.

All are deterministic for a given ``seed``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

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


def resample_indices(n: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The one bootstrap draw of ragjudge: ``n_resamples`` index vectors of length ``n`` drawn
    with replacement from ``0..n-1`` (``numpy.random.default_rng(seed)``), yielded as (B, n)
    matrices of at most ~2M entries so that memory stays bounded for large n. Every interval
    (``bootstrap_means`` here, ``calibrate.resample`` for any statistic) resamples through it.
    A draw that fits one matrix is the same for every statistic of ``n`` items with the same
    ``seed`` (a sweep's every metric at every k), so the last few are kept (``_one_block``,
    read-only) rather than drawn again."""
    step = max(1, 2_000_000 // n)
    if n_resamples <= step:
        yield _one_block(n, n_resamples, seed)
        return
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, step):
        yield rng.integers(0, n, size=(min(n_resamples, start + step) - start, n))


@lru_cache(maxsize=4)
def _one_block(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """``resample_indices``' draw when it is one matrix (at most ~2M entries, so n fits int32),
    as int32 (the same indices in 8 MB at most), read-only."""
    block = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n)).astype(np.int32)
    block.setflags(write=False)
    return block


def bootstrap_means(
    values: Iterable[float], *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> np.ndarray:
    """The means of ``n_resamples`` resamples (with replacement) of ``values``."""
    arr = _as_array(values)
    if arr.size == 0:
        raise ValueError("bootstrap of an empty sample")
    if arr.size == 1:
        return np.full(n_resamples, float(arr[0]))
    return np.concatenate(
        [arr[idx].mean(axis=1) for idx in resample_indices(arr.size, n_resamples, seed)]
    )


def percentile_interval(means: np.ndarray, confidence: float) -> tuple[float, float]:
    """The (alpha/2, 1 - alpha/2) quantiles of bootstrap means, alpha = 1 - confidence."""
    alpha = 1.0 - confidence
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def bootstrap_ci(
    values: Iterable[float],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean. One value gives a zero-width interval."""
    means = bootstrap_means(values, n_resamples=n_resamples, seed=seed)
    return percentile_interval(means, confidence)


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


EXACT_SIGN_FLIPS = 12
"""Up to this many non-zero differences the permutation p-value is exact (2^m sign vectors)."""


def paired_permutation_p(
    a: Iterable[float], b: Iterable[float], *, n_resamples: int = 10_000, seed: int = 0
) -> float:
    """Two-sided sign-flip permutation p-value for mean(a - b) = 0 (module docstring)."""
    d = _as_array(a) - _as_array(b)
    if d.size == 0:
        raise ValueError("permutation test of an empty sample")
    d = d[d != 0.0]
    total = float(d.sum())
    observed = abs(total)
    if observed == 0.0:
        return 1.0
    tol = 1e-9 * max(1.0, observed)
    if d.size <= EXACT_SIGN_FLIPS:
        bits = (np.arange(2**d.size)[:, None] >> np.arange(d.size)) & 1
        null = np.abs((2.0 * bits - 1.0) @ d)
        return float(np.count_nonzero(null >= observed - tol) / null.size)
    rng = np.random.default_rng(seed)
    hits = 0
    step = max(1, 2_000_000 // d.size)  # bounded memory for large n
    for start in range(0, n_resamples, step):
        size = min(step, n_resamples - start)
        raw = np.frombuffer(rng.bytes(-(-size * d.size // 8)), dtype=np.uint8)
        bits = np.unpackbits(raw)[: size * d.size].reshape(size, d.size).astype(float)
        null = np.abs(2.0 * (bits @ d) - total)  # sum(s * d) with s = 2 * bit - 1
        hits += int(np.count_nonzero(null >= observed - tol))
    return float((1 + hits) / (1 + n_resamples))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: with p sorted ascending
    p_(1) <= ... <= p_(M), p_adj_(j) = max_{i<=j} min(1, (M - i + 1) * p_(i))."""
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[idx]))
        adjusted[idx] = running
    return [float(x) for x in adjusted]


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg step-up adjusted p-values (q-values), in the order given:
    q_(j) = min_{i>=j} min(1, M * p_(i) / i). Rejecting q < alpha controls the false discovery
    rate at alpha for independent or positively dependent tests."""
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    adjusted = np.empty(m)
    running = 1.0
    for rank in range(m - 1, -1, -1):
        idx = order[rank]
        running = min(running, m * p_values[idx] / (rank + 1))
        adjusted[idx] = min(1.0, running)
    return [float(x) for x in adjusted]


def paired_mde(sd: float, n: int, *, alpha: float, power: float = 0.8) -> float:
    """Minimum detectable effect of a two-sided paired test at level ``alpha``:
    (t_{1-alpha/2, n-1} + t_{power, n-1}) * sd / sqrt(n), with ``sd`` the standard deviation of
    the paired differences."""
    from scipy.stats import t as t_dist

    if n < 2:
        return float("inf")
    df = n - 1
    return float((t_dist.ppf(1 - alpha / 2, df) + t_dist.ppf(power, df)) * sd / np.sqrt(n))


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
