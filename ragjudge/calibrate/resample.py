"""Item bootstrap for any agreement statistic: every number the calibration area reports is an
``Estimate`` (point value and a 95% percentile interval).

Resampling unit: the *item*, drawn by ``ragjudge.stats.resample_indices`` (the one bootstrap
draw, the same as every mean's interval). ``stat(idx)`` receives an integer index array of
length n drawn with replacement from ``0..n-1`` and returns the statistic on those items (NaN
when it is undefined on that resample, e.g. kappa of a resample holding one class only). The
share of undefined resamples is reported, never hidden.

The interval is the percentile interval of the defined resampled values ``t*`` corrected for the
bootstrap's median bias: ``[v + q(alpha/2) - m, v + q(1 - alpha/2) - m]`` with ``v`` the point
value and ``m`` the median of ``t*``, then kept within ``[min(t*, v), max(t*, v)]`` (the values
the statistic took). It contains its own point estimate by construction, and is the plain
percentile interval when the resamples are centred on ``v``. Without the correction a statistic
whose resamples are biased away from ``v`` printed an interval that missed it: a binned absolute
error such as ECE only grows under resampling (0.035 was printed with [0.042, 0.236]).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragjudge.stats import DEFAULT_RESAMPLES, resample_indices


class Estimate(BaseModel):
    """``value [ci_low, ci_high] (n items)``; ``value=None`` with a ``note`` when undefined."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int
    confidence: float = 0.95
    note: str | None = None

    def fmt(self, digits: int = 3) -> str:
        """``0.712 [0.650, 0.771]`` or ``n/a (reason)``."""
        if self.value is None:
            return f"n/a ({self.note})" if self.note else "n/a"
        if self.ci_low is None or self.ci_high is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.ci_low:.{digits}f}, {self.ci_high:.{digits}f}]"


def bootstrap_estimate(
    name: str,
    stat: Callable[[np.ndarray], float],
    n: int,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
    undefined_reason: str = "undefined on these items",
) -> Estimate:
    """Point value ``stat(arange(n))`` and its percentile bootstrap interval over items
    (``stat`` takes one index vector; ``bootstrap_vectorised`` with it applied row by row)."""

    def rows(idx: np.ndarray) -> np.ndarray:
        return np.fromiter((stat(row) for row in idx), dtype=float, count=len(idx))

    return bootstrap_vectorised(
        name,
        rows,
        n,
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        undefined_reason=undefined_reason,
    )


def bootstrap_vectorised(
    name: str,
    stat: Callable[[np.ndarray], np.ndarray],
    n: int,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
    undefined_reason: str = "undefined on these items",
) -> Estimate:
    """As ``bootstrap_estimate`` but ``stat`` maps a (B, n) index matrix to B values at once."""
    if n == 0:
        return Estimate(name=name, value=None, n=0, confidence=confidence, note="no items")
    value = float(stat(np.arange(n)[None, :])[0])
    if not math.isfinite(value):
        return Estimate(name=name, value=None, n=n, confidence=confidence, note=undefined_reason)
    if n == 1:
        return Estimate(
            name=name, value=value, n=n, confidence=confidence, note="one item: no interval"
        )
    samples = np.concatenate([stat(idx) for idx in resample_indices(n, n_resamples, seed)])
    return _from_samples(name, value, samples, n, confidence)


def _from_samples(
    name: str, value: float, samples: np.ndarray, n: int, confidence: float
) -> Estimate:
    finite = samples[np.isfinite(samples)]
    undefined = samples.size - finite.size
    note = None
    if undefined:
        note = f"{undefined} of {samples.size} resamples undefined (left out of the interval)"
    if finite.size == 0:
        return Estimate(name=name, value=value, n=n, confidence=confidence, note=note)
    alpha = 1.0 - confidence
    lo, mid, hi = np.quantile(finite, [alpha / 2, 0.5, 1 - alpha / 2])
    floor, ceiling = min(float(finite.min()), value), max(float(finite.max()), value)
    return Estimate(
        name=name,
        value=value,
        ci_low=max(floor, value + float(lo - mid)),
        ci_high=min(ceiling, value + float(hi - mid)),
        n=n,
        confidence=confidence,
        note=note,
    )
