"""Calibration of a judge score s in [0, 1] to P(human says yes | s).

- Platt: logistic regression ``P = 1 / (1 + exp(-(a s + b)))`` (scikit-learn, weak L2, C=100).
- Isotonic: the monotone non-decreasing step function of least squares (scikit-learn
  ``IsotonicRegression``, clipped to [0, 1]), applied by linear interpolation between its knots.

Quality is measured out of sample: the probabilities come from ``cross_val_predict`` over
stratified folds (5, or fewer when a class is rarer), so ECE and Brier "after" are not flattered
by fitting and scoring on the same items. "Before" scores the raw judge score as a probability.

- Brier = mean((p - y)^2)
- ECE = sum_b (n_b / N) |mean(y in b) - mean(p in b)| over 10 equal-width bins of p
  (the last bin includes 1.0)

The shipped calibrator is refitted on all items; ``threshold`` is the lowest judge score at
which it reaches P(yes) = 0.5 (Platt: -b / a; isotonic: the first crossing of 0.5,
interpolated), 0.0 when every score is already a likely yes, None when none is.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from .resample import DEFAULT_RESAMPLES, Estimate, bootstrap_vectorised

Method = Literal["platt", "isotonic"]
N_BINS = 10
PLATT_C = 100.0


class Calibrator(BaseModel):
    """A fitted map from judge score to P(yes); JSON-serialisable, so a judge can ship it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Method
    coef: float | None = None
    intercept: float | None = None
    knots_x: list[float] = Field(default_factory=list)
    knots_y: list[float] = Field(default_factory=list)

    def predict(self, scores: np.ndarray | list[float]) -> np.ndarray:
        s = np.asarray(scores, dtype=float)
        if self.method == "platt":
            z = float(self.coef or 0.0) * s + float(self.intercept or 0.0)
            out: np.ndarray = 1.0 / (1.0 + np.exp(-z))
            return out
        return np.interp(s, np.asarray(self.knots_x), np.asarray(self.knots_y))

    def threshold(self) -> float | None:
        """Lowest judge score in [0, 1] with P(yes) >= 0.5: 0.0 when every score already is a
        likely yes; None when no score reaches it (or the Platt fit decreases with the score)."""
        if self.method == "platt":
            if not self.coef or self.coef <= 0:
                return None
            t = -float(self.intercept or 0.0) / float(self.coef)
            return max(0.0, t) if t <= 1.0 else None
        xs, ys = np.asarray(self.knots_x), np.asarray(self.knots_y)
        if ys.size == 0 or ys.max() < 0.5:
            return None
        j = int(np.argmax(ys >= 0.5))
        if j == 0:
            return 0.0  # scores below the first knot map to its value
        x0, x1, y0, y1 = xs[j - 1], xs[j], ys[j - 1], ys[j]
        t = float(x0 + (0.5 - y0) * (x1 - x0) / (y1 - y0))
        return t if t <= 1.0 else None


class CalibrationReport(BaseModel):
    """One method's calibration of one judge: before/after quality and the shipped map."""

    model_config = ConfigDict(extra="forbid")

    method: Method
    n: int
    n_folds: int
    positive_rate: float
    brier_before: Estimate
    brier_after: Estimate
    ece_before: Estimate
    ece_after: Estimate
    threshold: float | None
    calibrator: Calibrator
    cv_probabilities: list[float]
    """Out-of-fold P(yes) per item, in input order (for the reliability diagram)."""


def brier(p: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((np.asarray(p, float) - np.asarray(y, float)) ** 2))


def _bins(p: np.ndarray, n_bins: int) -> np.ndarray:
    return np.minimum((np.asarray(p, float) * n_bins).astype(int), n_bins - 1)


def ece(p: np.ndarray, y: np.ndarray, n_bins: int = N_BINS) -> float:
    """Expected calibration error over equal-width bins (see the module docstring)."""
    p_, y_ = np.asarray(p, float), np.asarray(y, float)
    if p_.size == 0:
        return math.nan
    b = _bins(p_, n_bins)
    total = 0.0
    for k in np.unique(b):
        sel = b == k
        total += sel.sum() / p_.size * abs(y_[sel].mean() - p_[sel].mean())
    return float(total)


def _ece_rows(p: np.ndarray, y: np.ndarray, idx: np.ndarray, n_bins: int) -> np.ndarray:
    """ECE of each resample (row of ``idx``) at once."""
    pi, yi = p[idx], y[idx]
    b = _bins(pi, n_bins)
    n = idx.shape[1]
    out = np.zeros(idx.shape[0])
    for k in range(n_bins):
        sel = b == k
        sp = np.where(sel, pi, 0.0).sum(axis=1)
        sy = np.where(sel, yi, 0.0).sum(axis=1)
        out += np.abs(sy - sp) / n  # = (n_b / n) * |mean y - mean p| in bin b
    return out


def reliability_bins(p: np.ndarray, y: np.ndarray, n_bins: int = N_BINS) -> list[dict[str, float]]:
    """Per non-empty bin: mean predicted, observed yes-rate, count (the reliability diagram)."""
    p_, y_ = np.asarray(p, float), np.asarray(y, float)
    b = _bins(p_, n_bins)
    return [
        {
            "bin": float(k),
            "predicted": float(p_[b == k].mean()),
            "observed": float(y_[b == k].mean()),
            "count": float((b == k).sum()),
        }
        for k in np.unique(b)
    ]


def fit_calibrator(scores: np.ndarray, yes: np.ndarray, method: Method) -> Calibrator:
    """Fit on all the given items."""
    s = np.asarray(scores, float)
    y = np.asarray(yes, int)
    if method == "platt":
        from sklearn.linear_model import LogisticRegression

        lr = LogisticRegression(C=PLATT_C).fit(s.reshape(-1, 1), y)
        return Calibrator(
            method="platt", coef=float(lr.coef_[0, 0]), intercept=float(lr.intercept_[0])
        )
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(s, y)
    return Calibrator(
        method="isotonic",
        knots_x=[float(v) for v in iso.X_thresholds_],
        knots_y=[float(v) for v in iso.y_thresholds_],
    )


def _cv_predict(s: np.ndarray, y: np.ndarray, method: Method, folds: int, seed: int) -> np.ndarray:
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    x = s.reshape(-1, 1)
    if method == "platt":
        proba = cross_val_predict(
            LogisticRegression(C=PLATT_C), x, y, cv=cv, method="predict_proba"
        )
        return np.asarray(proba[:, 1], dtype=float)
    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    return np.asarray(cross_val_predict(iso, s, y, cv=cv.split(x, y)), dtype=float)


def calibrate(
    scores: np.ndarray | list[float],
    yes: np.ndarray | list[bool],
    method: Method,
    *,
    folds: int = 5,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> CalibrationReport:
    """Cross-validated calibration of ``scores`` to the human ``yes`` (see module docstring).

    Raises ``ValueError`` when fewer than two items of each class exist (nothing to fit).
    """
    s = np.asarray(scores, float)
    y = np.asarray(yes, bool).astype(int)
    minority = int(min(y.sum(), y.size - y.sum()))
    if minority < 2:
        raise ValueError("calibration needs at least two human 'yes' and two 'no' labels")
    k = max(2, min(folds, minority))
    cv_p = _cv_predict(s, y, method, k, seed)
    n = s.size
    yf = y.astype(float)

    def boot(name: str, p: np.ndarray, kind: str) -> Estimate:
        if kind == "brier":
            return bootstrap_vectorised(
                name,
                lambda idx: ((p[idx] - yf[idx]) ** 2).mean(axis=1),
                n,
                n_resamples=n_resamples,
                seed=seed,
            )
        return bootstrap_vectorised(
            name, lambda idx: _ece_rows(p, yf, idx, N_BINS), n, n_resamples=n_resamples, seed=seed
        )

    cal = fit_calibrator(s, y, method)
    return CalibrationReport(
        method=method,
        n=n,
        n_folds=k,
        positive_rate=float(yf.mean()),
        brier_before=boot("brier_before", s, "brier"),
        brier_after=boot("brier_after", cv_p, "brier"),
        ece_before=boot("ece_before", s, "ece"),
        ece_after=boot("ece_after", cv_p, "ece"),
        threshold=cal.threshold(),
        calibrator=cal,
        cv_probabilities=[float(v) for v in cv_p],
    )
