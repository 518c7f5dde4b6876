import math

import numpy as np
import pytest
from pydantic import ValidationError

from ragjudge.schema import JudgeResult, JudgeStatus, Ranking, ScoredDoc
from ragjudge.stats import (
    aggregate,
    bootstrap_ci,
    paired_bootstrap,
    paired_permutation_p,
    resample_indices,
)


def _result(score, status=JudgeStatus.ok):
    return JudgeResult(
        judge="faithfulness",
        judge_version="1",
        backend="offline",
        item_id="q1",
        score=score,
        status=status,
    )


def test_score_given_exactly_when_ok():
    assert _result(0.5).score == 0.5
    assert _result(None, JudgeStatus.parse_error).score is None
    with pytest.raises(ValidationError):
        _result(None)
    with pytest.raises(ValidationError):
        _result(0.3, JudgeStatus.timeout)
    with pytest.raises(ValidationError):
        _result(math.nan)
    with pytest.raises(ValidationError):
        _result(1.2)


def test_ranking_prefix():
    r = Ranking(query_id="q", docs=[ScoredDoc(doc_id=str(i), score=-i) for i in range(5)])
    assert r.top(3).doc_ids == ["0", "1", "2"]


def test_aggregate_reports_coverage_and_statuses():
    results = [_result(1.0), _result(0.0), _result(None, JudgeStatus.timeout), _result(0.5)]
    agg = aggregate(results)
    assert agg.mean == pytest.approx(0.5)
    assert (agg.n_scored, agg.n_total) == (3, 4)
    assert agg.coverage == pytest.approx(0.75)
    assert agg.status_counts == {"ok": 3, "timeout": 1}
    assert agg.ci_low is not None and agg.ci_high is not None
    assert agg.ci_low <= agg.mean <= agg.ci_high


def test_aggregate_of_nothing_scored_is_none_not_nan():
    agg = aggregate([_result(None, JudgeStatus.parse_error)])
    assert agg.mean is None and agg.n_scored == 0 and agg.coverage == 0.0


def test_bootstrap_ci_covers_normal_mean():
    rng = np.random.default_rng(1)
    hits = 0
    for seed in range(200):
        x = rng.normal(0.3, 1.0, size=60)
        lo, hi = bootstrap_ci(x, n_resamples=500, seed=seed)
        hits += lo <= 0.3 <= hi
    assert 0.88 <= hits / 200 <= 0.99


def test_bootstrap_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci([0.1, float("nan")])


def test_paired_statistics_detect_a_real_shift_and_not_noise():
    rng = np.random.default_rng(2)
    base = rng.uniform(0, 1, 80)
    better = base + 0.1 + rng.normal(0, 0.05, 80)
    diff, lo, _hi = paired_bootstrap(better, base)
    assert lo > 0 and diff == pytest.approx(np.mean(better - base))
    assert paired_permutation_p(better, base) < 0.01
    noise = base + rng.normal(0, 0.05, 80)
    assert paired_permutation_p(noise, base) > 0.01


def test_the_bootstrap_draw_is_numpys_whether_kept_or_drawn_in_blocks():
    """``resample_indices`` yields ``default_rng(seed).integers(0, n, (B, n))`` in blocks of
    at most ~2M entries; a one-block draw is kept for the next statistic of the same size, and
    no caller can change what the next one gets."""
    for n, b, seed in [(60, 2000, 0), (7, 500, 3), (1500, 2000, 1)]:
        want = np.random.default_rng(seed).integers(0, n, size=(b, n))
        blocks = list(resample_indices(n, b, seed))
        assert len(blocks) == (1 if n * b <= 2_000_000 else math.ceil(b / (2_000_000 // n)))
        got = np.concatenate(blocks)
        assert got.shape == (b, n) and (got == want).all()
    (kept,) = resample_indices(60, 2000, 0)
    assert next(iter(resample_indices(60, 2000, 0))) is kept  # drawn once
    with pytest.raises(ValueError, match="read-only"):
        kept[0, 0] = 1
