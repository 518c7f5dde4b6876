"""Prediction-powered inference: coverage by simulation (1,000 draws, vectorised) and widths."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from ragjudge.calibrate.ppi import estimate_mean, ppi_mean, ppi_plus_mean

Z = float(norm.ppf(0.975))


def _draws(draws: int, n: int, big_n: int, seed: int) -> tuple[np.ndarray, ...]:
    """A biased, noisy judge: human Y ~ Bernoulli(p(x)), judge f = clip(p(x) + 0.15 + noise)."""
    rng = np.random.default_rng(seed)
    p_lab = rng.beta(2, 2, size=(draws, n))
    p_unl = rng.beta(2, 2, size=(draws, big_n))
    y = (rng.uniform(size=(draws, n)) < p_lab).astype(float)
    f_lab = np.clip(p_lab + 0.15 + rng.normal(0, 0.1, size=(draws, n)), 0, 1)
    f_unl = np.clip(p_unl + 0.15 + rng.normal(0, 0.1, size=(draws, big_n)), 0, 1)
    return y, f_lab, f_unl


def test_ppi_interval_covers_the_true_mean() -> None:
    y, f_lab, f_unl = _draws(1000, 80, 2000, seed=0)
    true_mean = 0.5  # E[Y] = E[Beta(2, 2)]
    theta, se = ppi_mean(y, f_lab, f_unl)
    covered = np.abs(theta - true_mean) <= Z * se
    assert covered.mean() >= 0.93
    theta2, se2, lam = ppi_plus_mean(y, f_lab, f_unl)
    assert (np.abs(theta2 - true_mean) <= Z * se2).mean() >= 0.93
    assert ((lam >= 0) & (lam <= 1)).all()
    # The judge alone is biased by +0.15: its interval almost never covers.
    judge = np.concatenate([f_lab, f_unl], axis=1)
    judge_se = judge.std(axis=1, ddof=1) / np.sqrt(judge.shape[1])
    assert (np.abs(judge.mean(axis=1) - true_mean) <= Z * judge_se).mean() < 0.05
    # PPI is narrower than the human-only interval on average with a good judge.
    human_se = y.std(axis=1, ddof=1) / np.sqrt(y.shape[1])
    assert np.median(se) < np.median(human_se)


def test_estimate_mean_by_hand() -> None:
    y = np.array([1.0, 0.0, 1.0, 1.0])
    f_lab = np.array([0.9, 0.4, 0.8, 0.7])
    f_unl = np.array([0.6, 0.9, 0.3, 0.8, 0.5])
    est = {e.method: e for e in estimate_mean(y, f_lab, f_unl)}
    rect = f_lab - y
    theta = f_unl.mean() - rect.mean()
    se = np.sqrt(f_unl.var(ddof=1) / 5 + rect.var(ddof=1) / 4)
    assert est["ppi"].value == pytest.approx(theta)
    # theta + q se passes 1: the interval is cut at the range of the mean, [0, 1]; q is t's
    # quantile on n - 1 = 3 degrees of freedom
    q = float(student_t.ppf(0.975, 3))
    assert theta + q * se > 1.0 and est["ppi"].ci_high == 1.0
    assert est["ppi"].ci_low == pytest.approx(theta - q * se)
    assert est["human_only"].value == pytest.approx(0.75)
    assert est["judge_only"].value == pytest.approx(np.r_[f_lab, f_unl].mean())
    assert est["ppi++"].lam is not None and 0 <= est["ppi++"].lam <= 1
    assert est["ppi"].n_labelled == 4 and est["ppi"].n_unlabelled == 5


def test_useless_judge_is_tuned_away() -> None:
    rng = np.random.default_rng(2)
    y = (rng.uniform(size=200) < 0.5).astype(float)
    f_lab, f_unl = rng.uniform(size=200), rng.uniform(size=2000)  # unrelated to y
    est = {e.method: e for e in estimate_mean(y, f_lab, f_unl)}
    assert est["ppi++"].lam is not None and est["ppi++"].lam < 0.3
    assert est["ppi++"].width < est["ppi"].width


def test_too_few_items_refused() -> None:
    with pytest.raises(ValueError):
        estimate_mean([1.0], [0.5], [0.2, 0.3])


def test_a_few_labels_get_an_interval_that_covers():
    """Three labels: the normal quantile's interval covered the human mean about 80% of the
    time it claimed 95% for; t's on n - 1 degrees of freedom covers it."""
    rng = np.random.default_rng(5)
    covered = {"z": 0, "t": 0}
    draws = 2000
    for _ in range(draws):
        y = rng.beta(2, 5, size=3)  # true mean 2/7
        f_lab, f_unl = rng.uniform(size=3), rng.uniform(size=50)
        human = next(e for e in estimate_mean(y, f_lab, f_unl) if e.method == "human_only")
        covered["t"] += human.ci_low <= 2 / 7 <= human.ci_high
        half = Z * y.std(ddof=1) / np.sqrt(3)
        covered["z"] += abs(y.mean() - 2 / 7) <= half
    assert covered["t"] / draws >= 0.93 and covered["z"] / draws < 0.88
