"""Agreement statistics between a judge and people, as pure functions of arrays.

Each returns a float and NaN exactly when the statistic is undefined on the input (a constant
variable for a correlation, one class only for kappa, no positive or no negative for AUC); the
callers turn NaN into an ``Estimate`` with a reason, so no NaN reaches a report.

Formulas (``a`` = human, ``b`` = judge; ``O`` = confusion counts, ``E`` = outer product of the
marginals / total):
- accuracy = mean(a == b)
- Cohen's kappa = (p_o - p_e) / (1 - p_e), p_o = trace(O)/N, p_e = sum(row_i col_i)/N^2
- weighted kappa = 1 - sum(w O) / sum(w E), quadratic w_ij = (i - j)^2 (linear: |i - j|)
- Pearson r; Spearman rho = Pearson of average ranks; Kendall tau-b (scipy)
- MAE = mean |a - b|
- AUC = P(score of a random positive > score of a random negative), ties count 1/2
  (Mann-Whitney U / (n_pos n_neg))
- pairwise accuracy: over pairs a human prefers one side of, the share where the judge's score
  difference points the same way; a judge tie (|diff| <= tie_eps) counts 1/2
- Krippendorff's alpha (package ``krippendorff``) on a coders x items matrix with NaN = missing
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy import stats as sps

AlphaLevel = Literal["nominal", "ordinal", "interval", "ratio"]
NAN = float("nan")


def _arr(x: Sequence[float] | np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=float)


def accuracy(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    a_, b_ = _arr(a), _arr(b)
    return float(np.mean(a_ == b_)) if a_.size else NAN


def confusion(
    a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray, n_classes: int
) -> np.ndarray:
    """Counts ``O[i, j]`` of items with human class ``i`` and judge class ``j`` (0-based)."""
    a_ = np.asarray(a, dtype=int)
    b_ = np.asarray(b, dtype=int)
    return np.bincount(a_ * n_classes + b_, minlength=n_classes * n_classes).reshape(
        n_classes, n_classes
    )


def cohen_kappa(
    a: Sequence[int] | np.ndarray,
    b: Sequence[int] | np.ndarray,
    n_classes: int,
    weights: Literal["linear", "quadratic"] | None = None,
) -> float:
    """Cohen's kappa of two labelings coded ``0..n_classes-1`` (optionally weighted)."""
    o = confusion(a, b, n_classes).astype(float)
    total = o.sum()
    if total == 0:
        return NAN
    e = np.outer(o.sum(axis=1), o.sum(axis=0)) / total
    if weights is None:
        w = 1.0 - np.eye(n_classes)
    else:
        i, j = np.indices((n_classes, n_classes))
        w = np.abs(i - j).astype(float)
        if weights == "quadratic":
            w = w**2
    denom = float((w * e).sum())
    if denom == 0.0:
        return NAN
    return float(1.0 - (w * o).sum() / denom)


def _constant(x: np.ndarray) -> bool:
    return x.size < 2 or bool(np.all(x == x[0]))


def pearson(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    a_, b_ = _arr(a), _arr(b)
    if _constant(a_) or _constant(b_):
        return NAN
    return float(np.corrcoef(a_, b_)[0, 1])


def spearman(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    a_, b_ = _arr(a), _arr(b)
    if _constant(a_) or _constant(b_):
        return NAN
    return pearson(sps.rankdata(a_), sps.rankdata(b_))


def kendall(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b (tie-corrected)."""
    a_, b_ = _arr(a), _arr(b)
    if _constant(a_) or _constant(b_):
        return NAN
    return float(sps.kendalltau(a_, b_).statistic)


def mae(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    a_, b_ = _arr(a), _arr(b)
    return float(np.mean(np.abs(a_ - b_))) if a_.size else NAN


def auc(positive: Sequence[float] | np.ndarray, score: Sequence[float] | np.ndarray) -> float:
    """ROC AUC of ``score`` for the binary ``positive`` (Mann-Whitney, ties 1/2)."""
    y = np.asarray(positive, dtype=bool)
    s = _arr(score)
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return NAN
    ranks = sps.rankdata(s)
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def pairwise_accuracy(
    judge_diff: Sequence[float] | np.ndarray,
    human_pref: Sequence[int] | np.ndarray,
    *,
    tie_eps: float = 1e-9,
) -> float:
    """Share of human-decided pairs the judge orders the same way.

    ``judge_diff`` = score(a) - score(b); ``human_pref`` = +1 (a), -1 (b), 0 (tie, ignored).
    """
    d = _arr(judge_diff)
    h = np.asarray(human_pref, dtype=int)
    keep = h != 0
    if not keep.any():
        return NAN
    d, h = d[keep], h[keep]
    judge = np.where(np.abs(d) <= tie_eps, 0, np.sign(d))
    credit = np.where(judge == 0, 0.5, (judge == h).astype(float))
    return float(credit.mean())


def krippendorff_alpha(
    reliability: np.ndarray,
    level: AlphaLevel,
    value_domain: Sequence[float] | None = None,
) -> float:
    """Krippendorff's alpha of a coders x items matrix (NaN = not coded)."""
    import krippendorff

    data = np.asarray(reliability, dtype=float)
    values = data[np.isfinite(data)]
    if values.size == 0 or np.unique(values).size < 2:
        return NAN
    # An item counts only when at least two coders coded it.
    pairable = (np.isfinite(data).sum(axis=0) >= 2).sum()
    if pairable == 0:
        return NAN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = krippendorff.alpha(
                reliability_data=data,
                level_of_measurement=level,
                value_domain=None if value_domain is None else list(value_domain),
            )
        except (ValueError, ZeroDivisionError):
            return NAN
    return float(value)
