"""Agreement statistics against their reference implementations on the same inputs."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, confusion_matrix, roc_auc_score

from ragjudge.calibrate import metrics as m
from ragjudge.calibrate.resample import bootstrap_estimate, bootstrap_vectorised


@pytest.fixture
def pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    human = rng.integers(1, 6, size=120)
    judge = np.clip(human + rng.integers(-1, 2, size=120), 1, 5)
    return human, judge


def test_kappa_matches_sklearn(pair: tuple[np.ndarray, np.ndarray]) -> None:
    h, j = pair
    for weights in (None, "linear", "quadratic"):
        ours = m.cohen_kappa(h - 1, j - 1, 5, weights=weights)  # type: ignore[arg-type]
        ref = cohen_kappa_score(h, j, weights=weights)
        assert ours == pytest.approx(ref, abs=1e-12)
    assert 0.3 < m.cohen_kappa(h - 1, j - 1, 5, weights="quadratic") < 1.0


def test_kappa_single_class_is_nan() -> None:
    assert np.isnan(m.cohen_kappa([1, 1, 1], [1, 1, 1], 2))


def test_confusion_matches_sklearn(pair: tuple[np.ndarray, np.ndarray]) -> None:
    h, j = pair
    ref = confusion_matrix(h, j, labels=[1, 2, 3, 4, 5])
    assert (m.confusion(h - 1, j - 1, 5) == ref).all()


def test_correlations_match_scipy() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=80)
    y = x + rng.normal(size=80)
    y[::7] = y[0]  # ties
    assert m.pearson(x, y) == pytest.approx(sps.pearsonr(x, y).statistic, abs=1e-12)
    assert m.spearman(x, y) == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)
    assert m.kendall(x, y) == pytest.approx(sps.kendalltau(x, y).statistic, abs=1e-12)
    assert np.isnan(m.pearson(x, np.ones_like(x)))
    assert np.isnan(m.spearman(np.ones(5), np.arange(5.0)))


def test_auc_matches_sklearn_with_ties() -> None:
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, size=200)
    s = np.round(rng.uniform(size=200) * 0.6 + 0.4 * y, 1)  # many ties
    assert m.auc(y, s) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert np.isnan(m.auc(np.ones(4), [0.1, 0.2, 0.3, 0.4]))


def test_mae_and_accuracy() -> None:
    assert m.mae([0, 1, 0.5], [0.5, 1, 0]) == pytest.approx(1 / 3)
    assert m.accuracy([1, 0, 1, 1], [1, 1, 1, 0]) == 0.5


def test_pairwise_accuracy_counts_judge_ties_half_and_skips_human_ties() -> None:
    diff = [0.3, -0.2, 0.0, 0.5, 0.1]
    pref = [1, 1, 1, -1, 0]
    # pairs 0..3 decided by people: correct, wrong, judge tie (1/2), wrong
    assert m.pairwise_accuracy(diff, pref) == pytest.approx((1 + 0 + 0.5 + 0) / 4)
    assert np.isnan(m.pairwise_accuracy([0.1], [0]))


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_krippendorff(level: str) -> None:
    rng = np.random.default_rng(11)
    data = rng.integers(1, 6, size=(3, 40)).astype(float)
    data[1] = np.clip(data[0] + rng.integers(-1, 2, size=40), 1, 5)
    data[2, ::4] = np.nan
    ours = m.krippendorff_alpha(data, level)  # type: ignore[arg-type]
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert ours == pytest.approx(ref, abs=1e-12)
    assert np.isnan(m.krippendorff_alpha(np.ones((2, 5)), "nominal"))


def test_alpha_equals_kappa_like_agreement_on_perfect_data() -> None:
    data = np.array([[1, 2, 3, 1, 2], [1, 2, 3, 1, 2]], float)
    assert m.krippendorff_alpha(data, "nominal") == pytest.approx(1.0)


def test_bootstrap_interval_brackets_value_and_shrinks_with_n() -> None:
    rng = np.random.default_rng(0)
    small = rng.normal(size=30)
    large = rng.normal(size=600)
    e_small = bootstrap_estimate("mean", lambda i: float(small[i].mean()), 30, seed=1)
    e_large = bootstrap_estimate("mean", lambda i: float(large[i].mean()), 600, seed=1)
    assert e_small.ci_low is not None and e_small.ci_high is not None
    assert e_large.ci_low is not None and e_large.ci_high is not None
    assert e_small.ci_low < e_small.value < e_small.ci_high  # type: ignore[operator]
    assert (e_large.ci_high - e_large.ci_low) < (e_small.ci_high - e_small.ci_low) / 2
    vec = bootstrap_vectorised("mean", lambda idx: large[idx].mean(axis=1), 600, seed=1)
    assert vec.value == pytest.approx(e_large.value)
    assert vec.ci_low == pytest.approx(e_large.ci_low, abs=0.02)


def test_bootstrap_reports_undefined_instead_of_nan() -> None:
    y = np.array([1, 1, 1, 1])
    e = bootstrap_estimate("kappa", lambda i: m.cohen_kappa(y[i], y[i], 2), 4, undefined_reason="x")
    assert e.value is None and e.note == "x"
    # Defined on the full sample but not on some resamples: counted in the note.
    y2 = np.array([0, 1, 1, 1, 1, 1])
    e2 = bootstrap_estimate("kappa", lambda i: m.cohen_kappa(y2[i], y2[i], 2), 6)
    assert e2.value == pytest.approx(1.0)
    assert e2.note is not None and "resamples undefined" in e2.note
