"""Prediction-powered inference of a mean (Angelopoulos et al., Science 2023; ARES uses it).

n items carry a human label Y and a judge score f; N further items carry only f. The target
is the human mean E[Y] over the population the items are drawn from.

- human only:  mean(Y)  ±  z sd(Y) / sqrt(n)
- judge only:  mean(f over all n + N)  ±  z sd(f) / sqrt(n + N). Narrow but biased: it covers
  the judge's mean, not the human one, unless the judge is unbiased.
- PPI:  theta = mean(f_unl) - mean(f_lab - Y)  (the judge mean, corrected by the measured
  bias ``rectifier``), variance  var(f_unl) / N + var(f_lab - Y) / n.
- PPI++ (power-tuned, Angelopoulos, Duchi & Zrnic 2023):
  theta = mean(Y) + lam (mean(f_unl) - mean(f_lab)) with
  lam = clip(Cov(Y, f_lab) / ((1 + n/N) Var(f)), 0, 1), variance
  lam^2 var(f_unl) / N + var(Y - lam f_lab) / n. lam = 0 is the human-only estimate, lam = 1
  is PPI; tuning never does asymptotically worse than either.

Intervals are ``theta ± q sigma`` with ``q`` Student's t quantile at 1 - alpha/2 on n - 1
degrees of freedom for the estimates that use the n labels (human only, PPI, PPI++; on n + N - 1
for the judge only): the normal quantile claimed 95% for an interval of three labels that covers
far less often (t on n - 1 is exact for the human-only mean of normal labels and tends to z as
n grows). Each is intersected with the
range the mean can take (``bounds``, [0, 1] for normalised labels; the point estimate is
clipped to it too): the true mean lies in the range, so cutting off the part outside it removes
no value the interval could cover (coverage is unchanged) and never shows 1.080 for a share.
They are valid when the labelled items are a uniform random sample of the items (a spot-check
chosen by judge score is not, and the report says so). All functions work along the last
axis, so one call evaluates many simulated draws at once.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy.stats import t as student_t

Method = Literal["human_only", "judge_only", "ppi", "ppi++"]


class MeanEstimate(BaseModel):
    """One estimate of the human mean with its interval."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Method
    value: float
    ci_low: float
    ci_high: float
    n_labelled: int
    n_unlabelled: int
    lam: float | None = None
    """The power-tuning weight (PPI++ only)."""

    @property
    def width(self) -> float:
        return self.ci_high - self.ci_low


def _q(confidence: float, df: int) -> float:
    """Student's t quantile at ``0.5 + confidence / 2`` on ``df`` degrees of freedom."""
    return float(student_t.ppf(0.5 + confidence / 2.0, df))


def _var(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.var(x, axis=-1, ddof=1))


def ppi_mean(
    y_lab: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Classic PPI point estimate and standard error (along the last axis)."""
    rect = f_lab - y_lab
    theta = f_unl.mean(axis=-1) - rect.mean(axis=-1)
    se = np.sqrt(_var(f_unl) / f_unl.shape[-1] + _var(rect) / rect.shape[-1])
    return np.asarray(theta), se


def ppi_plus_mean(
    y_lab: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Power-tuned PPI++ point estimate, standard error and lam (along the last axis)."""
    n, big_n = y_lab.shape[-1], f_unl.shape[-1]
    yc = y_lab - y_lab.mean(axis=-1, keepdims=True)
    fc = f_lab - f_lab.mean(axis=-1, keepdims=True)
    cov = (yc * fc).sum(axis=-1) / (n - 1)
    var_f = _var(np.concatenate([f_lab, f_unl], axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(var_f > 0, cov / ((1.0 + n / big_n) * var_f), 0.0)
    lam = np.clip(lam, 0.0, 1.0)
    lam_k = lam[..., None] if np.ndim(lam) else lam
    theta = y_lab.mean(axis=-1) + lam * (f_unl.mean(axis=-1) - f_lab.mean(axis=-1))
    se = np.sqrt(lam**2 * _var(f_unl) / big_n + _var(y_lab - lam_k * f_lab) / n)
    return np.asarray(theta), se, np.asarray(lam)


def estimate_mean(
    y_lab: np.ndarray | list[float],
    f_lab: np.ndarray | list[float],
    f_unl: np.ndarray | list[float],
    *,
    confidence: float = 0.95,
    bounds: tuple[float, float] = (0.0, 1.0),
) -> list[MeanEstimate]:
    """Human-only, judge-only, PPI and PPI++ estimates of the human mean, with intervals
    clipped to ``bounds`` (module docstring).

    Needs n >= 2 labelled and N >= 2 unlabelled items (``ValueError`` otherwise).
    """
    lo_b, hi_b = bounds
    y = np.asarray(y_lab, float)
    fl = np.asarray(f_lab, float)
    fu = np.asarray(f_unl, float)
    n, big_n = y.size, fu.size
    if n < 2 or big_n < 2 or fl.size != n:
        raise ValueError("PPI needs >= 2 labelled items (with scores) and >= 2 unlabelled items")
    q_lab, q_all = _q(confidence, n - 1), _q(confidence, n + big_n - 1)

    def make(method: Method, theta: float, se: float, lam: float | None = None) -> MeanEstimate:
        q = q_all if method == "judge_only" else q_lab
        return MeanEstimate(
            method=method,
            value=float(np.clip(theta, lo_b, hi_b)),
            ci_low=float(np.clip(theta - q * se, lo_b, hi_b)),
            ci_high=float(np.clip(theta + q * se, lo_b, hi_b)),
            n_labelled=n,
            n_unlabelled=big_n,
            lam=lam,
        )

    f_all = np.concatenate([fl, fu])
    theta_pp, se_pp = ppi_mean(y, fl, fu)
    theta_pt, se_pt, lam = ppi_plus_mean(y, fl, fu)
    return [
        make("human_only", y.mean(), float(np.sqrt(_var(y) / n))),
        make("judge_only", f_all.mean(), float(np.sqrt(_var(f_all) / f_all.size))),
        make("ppi", float(theta_pp), float(se_pp)),
        make("ppi++", float(theta_pt), float(se_pt), float(lam)),
    ]
