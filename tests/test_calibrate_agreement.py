"""Per-dimension agreement: the right statistics per scale, matching references, with CIs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from ragjudge.calibrate.agreement import agree_dimension, judge_class
from ragjudge.calibrate.join import LabelledItem


def _item(i: int, scale: str, human: list[float], score: float | None, anns=None) -> LabelledItem:
    from ragjudge.calibrate.labels import consensus

    return LabelledItem(
        item_id=f"q{i}@k1",
        dimension="d",
        scale=scale,  # type: ignore[arg-type]
        human=consensus(human, scale),  # type: ignore[arg-type]
        human_values=human,
        annotators=anns or [None] * len(human),
        judge_score=score,
        judge_status="ok" if score is not None else "timeout",
    )


def test_binary_statistics_match_references_and_carry_intervals() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=150)
    s = np.clip(0.25 + 0.5 * y + rng.normal(0, 0.2, 150), 0, 1)
    items = [
        _item(i, "binary", [float(v)], float(x)) for i, (v, x) in enumerate(zip(y, s, strict=True))
    ]
    items.append(_item(999, "binary", [1.0], None))
    rep = agree_dimension(items, threshold=0.5, n_resamples=300)
    assert rep.n_labelled == 151 and rep.n_scored == 150
    assert rep.status_counts == {"ok": 150, "timeout": 1}
    assert rep.notes and "not scored" in rep.notes[0]
    kappa = rep.get("cohen_kappa")
    assert kappa.value == pytest.approx(cohen_kappa_score(y, (s >= 0.5).astype(int)))
    assert kappa.ci_low is not None and kappa.ci_low < kappa.value < kappa.ci_high  # type: ignore[operator]
    assert rep.get("spearman").value == pytest.approx(sps.spearmanr(y, s).statistic)
    conf = np.array(rep.confusion)
    assert conf.sum() == 150 and conf[1].sum() == y.sum()
    assert rep.get("accuracy").value == pytest.approx(np.trace(conf) / 150)
    assert rep.inter_annotator_alpha is None


def test_ordinal_uses_quadratic_kappa_on_classes() -> None:
    rng = np.random.default_rng(1)
    h = rng.integers(1, 6, size=100)
    s = np.clip((h - 1) / 4 + rng.normal(0, 0.12, 100), 0, 1)
    items = [
        _item(i, "ordinal", [float(v)], float(x)) for i, (v, x) in enumerate(zip(h, s, strict=True))
    ]
    rep = agree_dimension(items, n_resamples=200)
    qwk = rep.get("quadratic_kappa").value
    assert qwk == pytest.approx(cohen_kappa_score(h, judge_class(s), weights="quadratic"))
    assert qwk is not None and qwk > 0.8
    assert rep.get("accuracy@yes").value is not None
    assert rep.get("mae").value == pytest.approx(np.mean(np.abs((h - 1) / 4 - s)))


def test_judge_class_rounds_half_up() -> None:
    assert judge_class(np.array([0.0, 0.124, 0.125, 0.5, 1.0])).tolist() == [1, 1, 2, 3, 5]


def test_inter_annotator_alpha_is_the_ceiling() -> None:
    rng = np.random.default_rng(2)
    items = []
    for i in range(80):
        truth = float(rng.integers(0, 2))
        b = truth if rng.uniform() < 0.9 else 1 - truth
        items.append(_item(i, "binary", [truth, b], truth, anns=["ann1", "ann2"]))
    rep = agree_dimension(items, n_resamples=200)
    alpha = rep.inter_annotator_alpha
    assert alpha is not None and alpha.value is not None
    assert 0.5 < alpha.value < 0.95
    assert rep.n_annotators == 2 and rep.n_labels == 160


def test_pairwise_accuracy_and_tie_rates() -> None:
    items = [
        _item(0, "pairwise", [1.0], 0.4),
        _item(1, "pairwise", [1.0], -0.1),
        _item(2, "pairwise", [-1.0], -0.3),
        _item(3, "pairwise", [0.0], 0.2),
        _item(4, "pairwise", [-1.0], 0.0),
    ]
    rep = agree_dimension(items, n_resamples=100)
    assert rep.get("pairwise_accuracy").value == pytest.approx((1 + 0 + 1 + 0.5) / 4)
    assert rep.get("judge_tie_rate").value == pytest.approx(0.2)
    assert rep.get("human_tie_rate").value == pytest.approx(0.2)
    assert rep.confusion is None


def test_degenerate_dimension_reports_reasons_not_nan() -> None:
    items = [_item(i, "binary", [1.0], 0.9) for i in range(5)]
    rep = agree_dimension(items, n_resamples=50)
    kappa = rep.get("cohen_kappa")
    assert kappa.value is None and kappa.note and "one class" in kappa.note
    assert rep.get("accuracy").value == 1.0
