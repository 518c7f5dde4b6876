"""Calibration from judge score to P(human yes): cross-validated, better than raw when skewed."""

from __future__ import annotations

import numpy as np
import pytest

from ragjudge.calibrate.calibration import Calibrator, brier, calibrate, ece, reliability_bins


def _skewed(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A judge whose raw score overstates P(yes): the true P(yes | s) is s**3."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    return s, rng.uniform(size=n) < s**3


def test_ece_and_brier_by_hand() -> None:
    p = np.array([0.05, 0.15, 0.95, 0.95])
    y = np.array([0, 1, 1, 1])
    assert brier(p, y) == pytest.approx((0.05**2 + 0.85**2 + 0.05**2 + 0.05**2) / 4)
    # bins: [0, .1): |0 - .05| * 1/4 ; [.1, .2): |1 - .15| * 1/4 ; [.9, 1]: |1 - .95| * 2/4
    assert ece(p, y) == pytest.approx(0.05 / 4 + 0.85 / 4 + 0.05 / 2)
    assert [b["count"] for b in reliability_bins(p, y)] == [1, 1, 2]


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_calibration_improves_a_miscalibrated_judge(method: str) -> None:
    s, y = _skewed(400, seed=1)
    rep = calibrate(s, y, method, n_resamples=300)  # type: ignore[arg-type]
    assert rep.n_folds == 5 and rep.n == 400
    assert rep.ece_after.value is not None and rep.ece_before.value is not None
    assert rep.ece_after.value < rep.ece_before.value / 2
    assert rep.brier_after.value < rep.brier_before.value  # type: ignore[operator]
    # P(yes) = 0.5 where s**3 = 0.5, s = 0.794.
    assert rep.threshold == pytest.approx(0.5 ** (1 / 3), abs=0.08)
    assert len(rep.cv_probabilities) == 400
    # The shipped calibrator round-trips through JSON and predicts monotonically.
    cal = Calibrator.model_validate_json(rep.calibrator.model_dump_json())
    pred = cal.predict(np.linspace(0, 1, 11))
    assert np.all(np.diff(pred) >= -1e-12)


def test_cross_validation_is_out_of_sample() -> None:
    """On pure noise an in-sample isotonic fit looks calibrated; cross-validation must not."""
    rng = np.random.default_rng(4)
    s = rng.uniform(size=200)
    y = rng.uniform(size=200) < 0.5
    rep = calibrate(s, y, "isotonic", n_resamples=200)
    in_sample = Calibrator.model_validate(rep.calibrator).predict(s)
    assert brier(in_sample, y) < rep.brier_after.value  # type: ignore[operator]


def test_too_few_of_a_class_is_refused() -> None:
    with pytest.raises(ValueError, match="two human 'yes' and two 'no'"):
        calibrate([0.1, 0.2, 0.9], [False, True, True], "platt")


def test_folds_shrink_to_the_rarer_class() -> None:
    s = np.linspace(0, 1, 20)
    y = np.zeros(20, bool)
    y[[15, 19, 17]] = True
    assert calibrate(s, y, "platt", n_resamples=50).n_folds == 3


def test_threshold_edges() -> None:
    always = Calibrator(method="platt", coef=2.0, intercept=1.0)  # P(yes | 0) > 0.5
    assert always.threshold() == 0.0
    never = Calibrator(method="platt", coef=1.0, intercept=-5.0)  # crosses at 5 > 1
    assert never.threshold() is None
    assert Calibrator(method="platt", coef=-1.0, intercept=0.0).threshold() is None
    iso = Calibrator(method="isotonic", knots_x=[0.2, 0.6], knots_y=[0.3, 0.7])
    assert iso.threshold() == pytest.approx(0.4)
    assert Calibrator(method="isotonic", knots_x=[0.2], knots_y=[0.8]).threshold() == 0.0
    assert Calibrator(method="isotonic", knots_x=[0.2, 0.9], knots_y=[0.1, 0.4]).threshold() is None
