"""Bias probes find a planted bias and find none where there is none."""

from __future__ import annotations

import numpy as np
import pytest

from ragjudge.calibrate.bias import (
    length_bias,
    model_family,
    position_bias,
    probe_position,
    self_preference,
)
from ragjudge.calibrate.join import LabelledItem


def _items(human: np.ndarray, scores: np.ndarray) -> list[LabelledItem]:
    return [
        LabelledItem(
            item_id=f"q{i}@k3",
            dimension="faithfulness",
            scale="binary",
            human=float(h),
            human_values=[float(h)],
            annotators=[None],
            judge_score=float(s),
            judge_status="ok",
        )
        for i, (h, s) in enumerate(zip(human, scores, strict=True))
    ]


def test_length_bias_found_at_fixed_label_and_absent_when_not_planted() -> None:
    rng = np.random.default_rng(0)
    n = 200
    human = rng.integers(0, 2, size=n)
    length = rng.integers(5, 400, size=n)
    lengths = {f"q{i}@k3": int(v) for i, v in enumerate(length)}
    biased = np.clip(0.3 + 0.4 * human + 0.05 * np.log2(length) + rng.normal(0, 0.05, n), 0, 1)
    fair = np.clip(0.3 + 0.4 * human + rng.normal(0, 0.05, n), 0, 1)
    b = length_bias(_items(human, biased), lengths, n_resamples=300)
    f = length_bias(_items(human, fair), lengths, n_resamples=300)
    slope_b = next(e for e in b.estimates if e.name == "slope_per_doubling")
    slope_f = next(e for e in f.estimates if e.name == "slope_per_doubling")
    assert slope_b.value == pytest.approx(0.05, abs=0.015)
    assert slope_b.ci_low is not None and slope_b.ci_low > 0
    assert slope_f.ci_low is not None and slope_f.ci_high is not None
    assert slope_f.ci_low < 0 < slope_f.ci_high
    rho_b = next(e for e in b.estimates if e.name == "spearman_within_label")
    assert rho_b.value is not None and rho_b.value > 0.4


def test_length_bias_not_applicable_without_answers() -> None:
    probe = length_bias(_items(np.array([1, 0]), np.array([0.9, 0.1])), {})
    assert not probe.applicable and probe.note


def test_position_bias_flip_rate() -> None:
    # A judge that always prefers whatever is shown first: every pair flips.
    always_first = position_bias([1] * 20, [1] * 20, n_resamples=200)
    flip = always_first.estimates[0]
    assert flip.name == "flip_rate" and flip.value == 1.0
    assert always_first.estimates[1].value == 1.0
    # A consistent judge: preference follows the answer, not the slot.
    consistent = position_bias([1, -1, 1, 0], [-1, 1, -1, 0], n_resamples=200)
    assert consistent.estimates[0].value == 0.0
    assert consistent.estimates[1].value == 0.5


async def test_probe_position_runs_both_orders() -> None:
    async def longer_wins_unless_first_is_short(q: str, first: str, second: str) -> int:
        return 1 if len(first) >= len(second) else -1

    pairs = [("q", "a long answer", "short"), ("q", "x", "a long one")]
    probe = await probe_position(longer_wins_unless_first_is_short, pairs, n_resamples=100)
    assert probe.estimates[0].value == 0.0


def test_model_family() -> None:
    assert model_family("gpt-4o-mini") == "gpt"
    assert model_family("openai/o3-mini") == "gpt"
    assert model_family("meta-llama/Llama-3.1-8B") == "llama"
    assert model_family("claude-3-5-sonnet") == "claude"


def test_self_preference_gap_and_not_applicable() -> None:
    rng = np.random.default_rng(1)
    n = 120
    human = rng.integers(0, 2, size=n)
    same = np.arange(n) % 2 == 0
    scores = np.clip(0.2 + 0.6 * human + 0.15 * same + rng.normal(0, 0.05, n), 0, 1)
    items = _items(human, scores)
    gens = {it.item_id: ("gpt-4o" if s else "llama-3") for it, s in zip(items, same, strict=True)}
    probe = self_preference(items, gens, "gpt-4o-mini", n_resamples=300)
    gap = next(e for e in probe.estimates if e.name == "self_preference_gap")
    assert gap.value == pytest.approx(0.15, abs=0.05)
    assert gap.ci_low is not None and gap.ci_low > 0
    absent = self_preference(items, {}, None)
    assert not absent.applicable and "not applicable" in (absent.note or "")
