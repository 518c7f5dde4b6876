import numpy as np
import pytest

from ragjudge.errors import ConfigError
from ragjudge.report.compare import compare_runs
from ragjudge.report.runscores import MetricSeries, RunScores
from ragjudge.report.thresholds import Thresholds, load_thresholds
from ragjudge.stats import holm


def _run(run_id, series):
    return RunScores(run_id=run_id, series=series)


def _series(metric, k, values, kind="judge"):
    return MetricSeries(metric=metric, k=k, kind=kind, values=values)


def _values(arr, missing=()):
    return {f"q{i}": (None if i in missing else float(v)) for i, v in enumerate(arr)}


def test_holm_matches_step_down_definition():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone 0.06
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_real_drop_is_flagged_and_noise_is_not():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.4, 1.0, 60)
    dropped = np.clip(base - 0.15 + rng.normal(0, 0.03, 60), 0, 1)
    noisy = np.clip(base + rng.normal(0, 0.03, 60), 0, 1)
    baseline = _run(
        "b",
        [_series("faithfulness", 5, _values(base)), _series("answer_relevancy", 5, _values(base))],
    )
    current = _run(
        "c",
        [
            _series("faithfulness", 5, _values(dropped)),
            _series("answer_relevancy", 5, _values(noisy)),
        ],
    )
    cmp = compare_runs(current, baseline)
    by = {m.metric: m for m in cmp.metrics}
    assert by["faithfulness"].verdict == "regressed"
    assert by["faithfulness"].ci_high < 0
    assert by["answer_relevancy"].verdict == "unchanged"
    assert cmp.regressed


def test_improvement_and_minimum_effect():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.2, 0.8, 200)
    tiny = base + 0.01
    big = base + 0.1
    baseline = _run(
        "b",
        [
            _series("ndcg@10", 3, _values(base), "retrieval"),
            _series("recall@10", 3, _values(base), "retrieval"),
        ],
    )
    current = _run(
        "c",
        [
            _series("ndcg@10", 3, _values(big), "retrieval"),
            _series("recall@10", 3, _values(tiny), "retrieval"),
        ],
    )
    by = {m.metric: m for m in compare_runs(current, baseline).metrics}
    assert by["ndcg@10"].verdict == "improved"
    assert by["recall@10"].verdict == "unchanged"
    assert "smaller than" in by["recall@10"].reason


def test_too_few_items_is_inconclusive_and_floor_breach_regresses():
    base = _run("b", [_series("faithfulness", 5, _values([0.9] * 5))])
    cur = _run("c", [_series("faithfulness", 5, _values([0.8] * 5))])
    m = compare_runs(cur, base).metrics[0]
    assert m.verdict == "inconclusive" and "only 5" in m.reason
    floors = Thresholds.model_validate({"metrics": {"faithfulness": {"floors": {5: 0.85}}}})
    m = compare_runs(cur, base, floors).metrics[0]
    assert m.verdict == "regressed" and "floor" in m.reason


def test_coverage_drop_is_a_finding_even_when_the_mean_holds():
    vals = [0.8] * 50
    base = _run("b", [_series("faithfulness", 5, _values(vals, missing={0}))])
    cur = _run("c", [_series("faithfulness", 5, _values(vals, missing=set(range(10))))])
    cmp = compare_runs(cur, base)
    m = cmp.metrics[0]
    assert m.verdict == "identical"  # every paired value equal: no test, no family
    assert m.coverage_dropped and m.flagged and cmp.regressed
    assert "coverage fell from 98% to 80%" in m.reason


def test_thresholds_file_validation(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("defaults: {alpha: 0.01}\nmetrics:\n  faithfulness: {min_effect: 0.1}\n")
    t = load_thresholds(p)
    r = t.rule("faithfulness", 5)
    assert (r.alpha, r.min_effect) == (0.01, 0.1)
    with pytest.raises(ConfigError, match=r"metrics\.faithfulnes: unknown metric"):
        Thresholds.model_validate({"metrics": {"faithfulnes": {}}}).check_against(
            ["faithfulness"], [5]
        )
    p.write_text("metrics:\n  faithfulness: {min_efect: 0.1}\n")
    with pytest.raises(ConfigError, match="min_efect"):
        load_thresholds(p)
    with pytest.raises(ConfigError, match="does not exist"):
        load_thresholds(tmp_path / "missing.yaml")


def _drop_pair(ks_cur, ks_base, extra_cur=(), n=40, seed=3):
    """A baseline and a current run whose faithfulness and relevancy dropped by 0.15 at every
    k; ``extra_cur`` judges only the current run has."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.4, 1.0, n)
    worse = np.clip(base - 0.15 + rng.normal(0, 0.02, n), 0, 1)
    names = ("faithfulness", "answer_relevancy")
    baseline = _run("b", [_series(m, k, _values(base)) for m in names for k in ks_base])
    current = _run(
        "c",
        [_series(m, k, _values(worse)) for m in (*names, *extra_cur) for k in ks_cur],
    )
    return current, baseline


def test_a_k_only_tonight_has_does_not_empty_the_primary_family():
    """The headline k is one both runs have: with k = 10 new tonight it was 10, the primary
    family was empty and a clear regression at k = 3 exited 0."""
    from ragjudge.report.build import build_report

    current, baseline = _drop_pair([1, 3, 10], [1, 3])
    report = build_report(current, baseline)
    assert report.verdict == "regressed", report.primary
    assert "at k = 3" in report.primary
    primary = [m for m in report.metrics if m.role == "primary"]
    assert primary and all(m.k == 3 for m in primary)


def test_a_primary_metric_one_run_lacks_is_refused():
    from ragjudge.report.build import build_report

    current, baseline = _drop_pair([1, 3], [1, 3], extra_cur=("context_recall",))
    t = Thresholds.model_validate({"primary": {"metrics": ["context_recall"]}})
    with pytest.raises(ConfigError, match=r"primary\.metrics\.0: 'context_recall' is in one run"):
        build_report(current, baseline, thresholds=t)


def test_the_objective_combines_only_the_judges_both_runs_have():
    """An objective over three judges against one over two compared judge sets."""
    from ragjudge.report.build import build_report

    current, baseline = _drop_pair([3], [3], extra_cur=("context_recall",))
    with_extra = build_report(current, baseline)
    same, base2 = _drop_pair([3], [3])
    without = build_report(same, base2)
    objective = {
        r: next(m for m in rep.metrics if m.metric == "objective")
        for r, rep in (("extra", with_extra), ("same", without))
    }
    assert objective["extra"].diff == pytest.approx(objective["same"].diff)
    assert any("context_recall left out" in n for n in with_extra.notes)


def test_partial_runs_compare_means_and_floors_over_the_shared_queries():
    """With --allow-partial the means and the floor were over each run's own queries."""
    shared = {f"q{i}": 0.5 for i in range(12)}
    only_cur = {f"x{i}": 0.0 for i in range(30)}  # questions the baseline never had
    baseline = _run("b", [_series("completeness", 3, shared)])
    current = _run("c", [_series("completeness", 3, shared | only_cur)])
    t = Thresholds.model_validate({"metrics": {"completeness": {"floors": {3: 0.45}}}})
    (m,) = compare_runs(current, baseline, t).metrics
    assert (m.current_mean, m.baseline_mean) == (0.5, 0.5)
    assert m.verdict != "regressed"


def test_a_floor_outside_the_score_range_is_refused():
    with pytest.raises(Exception, match="less than or equal to 1"):
        Thresholds.model_validate({"metrics": {"faithfulness": {"floors": {3: 1.5}}}})
