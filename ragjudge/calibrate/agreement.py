"""Judge-vs-human agreement for one dimension, every statistic with a 95% item bootstrap CI.

Which statistics, by the scale of the human labels (judge score s in [0, 1], threshold t):
- binary: accuracy, Cohen's kappa and Krippendorff's alpha (nominal) of ``s >= t`` vs the
  label; ROC AUC, Spearman, Kendall tau-b, Pearson and MAE of ``s`` vs the 0/1 label; the
  confusion matrix at ``t``.
- ordinal 1..5: the judge class is ``round(1 + 4 s)``; exact accuracy, quadratic weighted
  kappa and alpha (ordinal) on classes; Spearman, Kendall, Pearson of ``s`` vs the label; MAE
  on the [0, 1] scale; and the binary statistics at human ``>= 4`` vs ``s >= t``.
- continuous [0, 1]: Spearman, Kendall, Pearson, MAE, alpha (interval); binary statistics at
  human ``>= 0.5`` vs ``s >= t``.
- pairwise: pairwise accuracy of ``score(a) - score(b)`` against the preference (judge ties
  count 1/2), with the judge tie rate and the human tie rate.

Inter-annotator Krippendorff's alpha (the ceiling a judge can be expected to reach) is given
whenever some item has two or more annotators.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from . import metrics as m
from .join import LabelledItem, status_counts
from .labels import ORDINAL_MAX, ORDINAL_MIN, Scale, is_yes, normalise
from .resample import DEFAULT_RESAMPLES, Estimate, bootstrap_estimate

_ALPHA_LEVEL: dict[Scale, m.AlphaLevel] = {
    "binary": "nominal",
    "ordinal": "ordinal",
    "continuous": "interval",
    "pairwise": "nominal",
}


class DimensionAgreement(BaseModel):
    """Agreement of one judge with the human labels of its dimension."""

    model_config = ConfigDict(extra="forbid")

    dimension: str
    scale: Scale
    threshold: float
    n_labelled: int
    """Labelled items (after the consensus of annotators)."""
    n_scored: int
    """Labelled items the judge scored (status ok); statistics are over these."""
    n_labels: int
    n_annotators: int
    status_counts: dict[str, int]
    estimates: list[Estimate]
    confusion: list[list[int]] | None = None
    """Rows human no/yes, columns judge no/yes, at ``threshold``."""
    inter_annotator_alpha: Estimate | None = None
    notes: list[str] = Field(default_factory=list)

    def get(self, name: str) -> Estimate:
        for e in self.estimates:
            if e.name == name:
                return e
        raise KeyError(name)


def judge_class(scores: np.ndarray) -> np.ndarray:
    """Judge score in [0, 1] -> ordinal class 1..5 (``round(1 + 4 s)``, half up)."""
    return np.clip(np.floor(1.0 + 4.0 * scores + 0.5), ORDINAL_MIN, ORDINAL_MAX).astype(int)


def _boot(
    name: str,
    fn: Callable[[np.ndarray], float],
    n: int,
    n_resamples: int,
    seed: int,
    reason: str,
) -> Estimate:
    return bootstrap_estimate(
        name, fn, n, n_resamples=n_resamples, seed=seed, undefined_reason=reason
    )


def binary_estimates(
    human_yes: np.ndarray,
    scores: np.ndarray,
    threshold: float,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    with_correlations: bool = True,
) -> list[Estimate]:
    """Decision statistics of ``scores >= threshold`` against the human yes/no."""
    y = human_yes.astype(int)
    pred = (scores >= threshold).astype(int)
    n = y.size
    one_class = "the human labels or judge decisions hold one class only"
    out = [
        _boot("accuracy", lambda i: m.accuracy(y[i], pred[i]), n, n_resamples, seed, "no items"),
        _boot(
            "cohen_kappa",
            lambda i: m.cohen_kappa(y[i], pred[i], 2),
            n,
            n_resamples,
            seed,
            one_class,
        ),
        _boot(
            "krippendorff_alpha",
            lambda i: m.krippendorff_alpha(np.vstack([y[i], pred[i]]), "nominal"),
            n,
            n_resamples,
            seed,
            one_class,
        ),
        _boot(
            "auc",
            lambda i: m.auc(y[i], scores[i]),
            n,
            n_resamples,
            seed,
            "needs both yes and no human labels",
        ),
    ]
    if with_correlations:
        out += _correlations(y.astype(float), scores, n_resamples, seed)
        out.append(_boot("mae", lambda i: m.mae(y[i], scores[i]), n, n_resamples, seed, "no items"))
    return out


def _correlations(
    human: np.ndarray, scores: np.ndarray, n_resamples: int, seed: int
) -> list[Estimate]:
    const = "one of the variables is constant"
    n = human.size
    return [
        _boot("spearman", lambda i: m.spearman(human[i], scores[i]), n, n_resamples, seed, const),
        _boot("kendall_tau", lambda i: m.kendall(human[i], scores[i]), n, n_resamples, seed, const),
        _boot("pearson", lambda i: m.pearson(human[i], scores[i]), n, n_resamples, seed, const),
    ]


def inter_annotator_alpha(
    items: Sequence[LabelledItem], *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Estimate | None:
    """Krippendorff's alpha among the human annotators (None when every item has one)."""
    if not items or all(len(it.human_values) < 2 for it in items):
        return None
    scale = items[0].scale
    coders = sorted({a or f"#{j}" for it in items for j, a in enumerate(it.annotators)})
    col = {c: r for r, c in enumerate(coders)}
    data = np.full((len(coders), len(items)), np.nan)
    for j, it in enumerate(items):
        for k, (ann, v) in enumerate(zip(it.annotators, it.human_values, strict=True)):
            data[col[ann or f"#{k}"], j] = v
    level = _ALPHA_LEVEL[scale]
    return bootstrap_estimate(
        "inter_annotator_alpha",
        lambda i: m.krippendorff_alpha(data[:, i], level),
        len(items),
        n_resamples=n_resamples,
        seed=seed,
        undefined_reason="fewer than two distinct labels among items with two annotators",
    )


def agree_dimension(
    items: Sequence[LabelledItem],
    *,
    threshold: float = 0.5,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> DimensionAgreement:
    """Every statistic of the module docstring for one dimension's labelled items."""
    if not items:
        raise ValueError("no labelled items")
    scale = items[0].scale
    dimension = items[0].dimension
    scored = [it for it in items if it.judge_score is not None]
    n_scored = len(scored)
    human = np.array([it.human for it in scored], dtype=float)
    scores = np.array([it.judge_score for it in scored], dtype=float)
    ests: list[Estimate] = []
    confusion = None
    notes: list[str] = []
    if n_scored < len(items):
        notes.append(
            f"{len(items) - n_scored} of {len(items)} labelled items were not scored by the "
            "judge (see status counts); statistics are over the scored ones"
        )
    if n_scored:
        if scale == "pairwise":
            ests = _pairwise(human, scores, n_resamples, seed)
        else:
            yes = np.array([is_yes(h, scale) for h in human])
            if scale == "binary":
                ests = binary_estimates(yes, scores, threshold, n_resamples=n_resamples, seed=seed)
            else:
                ests = _graded(scale, human, scores, n_resamples, seed)
                ests += [
                    e.model_copy(update={"name": f"{e.name}@yes"})
                    for e in binary_estimates(
                        yes,
                        scores,
                        threshold,
                        n_resamples=n_resamples,
                        seed=seed,
                        with_correlations=False,
                    )
                ]
            confusion = m.confusion(yes.astype(int), (scores >= threshold).astype(int), 2).tolist()
    n_ann = len({a for it in items for a in it.annotators if a is not None}) or 1
    return DimensionAgreement(
        dimension=dimension,
        scale=scale,
        threshold=threshold,
        n_labelled=len(items),
        n_scored=n_scored,
        n_labels=sum(len(it.human_values) for it in items),
        n_annotators=n_ann,
        status_counts=status_counts(items),
        estimates=ests,
        confusion=confusion,
        inter_annotator_alpha=inter_annotator_alpha(items, n_resamples=n_resamples, seed=seed),
        notes=notes,
    )


def _graded(
    scale: Scale, human: np.ndarray, scores: np.ndarray, n_resamples: int, seed: int
) -> list[Estimate]:
    n = human.size
    norm = np.array([normalise(h, scale) for h in human])
    out = _correlations(human, scores, n_resamples, seed)
    out.append(_boot("mae", lambda i: m.mae(norm[i], scores[i]), n, n_resamples, seed, "no items"))
    if scale == "ordinal":
        h_cls = human.astype(int) - ORDINAL_MIN
        j_cls = judge_class(scores) - ORDINAL_MIN
        k = ORDINAL_MAX - ORDINAL_MIN + 1
        out += [
            _boot(
                "exact_accuracy",
                lambda i: m.accuracy(h_cls[i], j_cls[i]),
                n,
                n_resamples,
                seed,
                "no items",
            ),
            _boot(
                "quadratic_kappa",
                lambda i: m.cohen_kappa(h_cls[i], j_cls[i], k, weights="quadratic"),
                n,
                n_resamples,
                seed,
                "no spread in either rating",
            ),
            _boot(
                "krippendorff_alpha",
                lambda i: m.krippendorff_alpha(
                    np.vstack([h_cls[i], j_cls[i]]).astype(float), "ordinal"
                ),
                n,
                n_resamples,
                seed,
                "fewer than two distinct ratings",
            ),
        ]
    else:
        out.append(
            _boot(
                "krippendorff_alpha",
                lambda i: m.krippendorff_alpha(np.vstack([norm[i], scores[i]]), "interval"),
                n,
                n_resamples,
                seed,
                "fewer than two distinct values",
            )
        )
    return out


def _pairwise(
    human: np.ndarray, diff: np.ndarray, n_resamples: int, seed: int, tie_eps: float = 1e-9
) -> list[Estimate]:
    pref = human.astype(int)
    n = pref.size
    return [
        _boot(
            "pairwise_accuracy",
            lambda i: m.pairwise_accuracy(diff[i], pref[i], tie_eps=tie_eps),
            n,
            n_resamples,
            seed,
            "every human label is a tie",
        ),
        _boot(
            "judge_tie_rate",
            lambda i: float(np.mean(np.abs(diff[i]) <= tie_eps)),
            n,
            n_resamples,
            seed,
            "no items",
        ),
        _boot(
            "human_tie_rate",
            lambda i: float(np.mean(pref[i] == 0)),
            n,
            n_resamples,
            seed,
            "no items",
        ),
    ]
