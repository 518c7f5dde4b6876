"""Retrieval metrics: the classic worked examples, edge cases, and the vectorised engine against
the per-query reference functions."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from ragjudge.errors import ConfigError, DataError
from ragjudge.io import DataWarning, trec_order
from ragjudge.metrics import (
    average_precision,
    bootstrap_columns,
    dcg_at_k,
    evaluate_rankings,
    evaluate_run,
    f1_at_k,
    hit_rate_at_k,
    metric_keys,
    ndcg_at_k,
    precision_at_k,
    r_precision,
    rankings_to_run,
    recall_at_k,
    reciprocal_rank,
    to_document_level,
)
from ragjudge.schema import Ranking, ScoredDoc
from ragjudge.stats import bootstrap_ci


def _ranking(qid: str, ids: list[str]) -> Ranking:
    # Scores deliberately increase down the list: evaluate_rankings must not re-sort.
    return Ranking(
        query_id=qid, docs=[ScoredDoc(doc_id=d, score=float(i)) for i, d in enumerate(ids)]
    )


def test_recall_and_precision_worked_example() -> None:
    # 10 relevant documents, 3 of them in the top 5.
    grades = {f"r{i}": 1 for i in range(10)}
    ranked = ["r0", "x1", "r1", "x2", "r2", "r3", "r4"]
    assert recall_at_k(ranked, grades, 5) == pytest.approx(0.3)
    assert precision_at_k(ranked, grades, 5) == pytest.approx(0.6)
    assert f1_at_k(ranked, grades, 5) == pytest.approx(2 * 0.3 * 0.6 / 0.9)


def test_mrr_worked_example() -> None:
    # First relevant document at ranks 1, 3 and 5 for three queries: MRR = (1 + 1/3 + 1/5) / 3.
    qrels = {"a": {"r": 1}, "b": {"r": 1}, "c": {"r": 1}}
    rankings = {
        "a": _ranking("a", ["r", "x", "y"]),
        "b": _ranking("b", ["x", "y", "r"]),
        "c": _ranking("c", ["x", "y", "z", "w", "r"]),
    }
    report = evaluate_rankings(qrels, rankings, ks=[1, 3, 5])
    assert round(report.mean["mrr"], 3) == 0.511
    assert evaluate_rankings(qrels, list(rankings.values()), ks=[1, 3, 5]).mean == report.mean
    assert report.mean["mrr@3"] == pytest.approx((1 + 1 / 3) / 3)
    assert [reciprocal_rank(r.doc_ids, qrels[q]) for q, r in rankings.items()] == [1, 1 / 3, 1 / 5]


def test_average_precision_worked_example() -> None:
    # Three relevant documents at positions 1, 4 and 7: AP = (1/1 + 2/4 + 3/7) / 3.
    ranked = ["r1", "x", "y", "r2", "z", "w", "r3", "v"]
    grades = {"r1": 1, "r2": 1, "r3": 1}
    assert round(average_precision(ranked, grades), 3) == 0.643
    assert average_precision(ranked, grades, k=4) == pytest.approx((1 + 2 / 4) / 3)


def test_dcg_and_ndcg_worked_examples_use_exponential_gain() -> None:
    # Grades (3, 2, 0): exponential gain 7/log2(2) + 3/log2(3) + 0 = 8.89 (linear would be 4.26).
    grades = {"a": 3, "b": 2, "c": 0}
    assert round(dcg_at_k(["a", "b", "c"], grades, 3), 2) == 8.89
    assert round(dcg_at_k(["a", "b", "c"], grades, 3, gain="linear"), 2) == 4.26
    # Ranking (2, 0, 3): (3 + 0 + 7/2) / 8.89 = 0.73 with exponential gain (0.82 with linear).
    assert round(ndcg_at_k(["b", "c", "a"], grades, 3), 2) == 0.73
    assert round(ndcg_at_k(["b", "c", "a"], grades, 3, gain="linear"), 2) == 0.82
    report = evaluate_rankings({"q": grades}, {"q": _ranking("q", ["b", "c", "a"])}, ks=[3])
    assert round(report.mean["ndcg@3"], 2) == 0.73
    assert round(report.mean["ndcg_linear@3"], 2) == 0.82


def test_ndcg_is_finite_for_any_grade() -> None:
    """2^g overflows past g = 1023; NDCG scales the gains by the top grade and stays exact."""
    huge = {"a": 99_999, "b": 1}
    assert ndcg_at_k(["a", "b"], huge, 2) == 1.0
    assert 0.0 <= ndcg_at_k(["b", "a"], huge, 2) < 0.7
    small = {"a": 3, "b": 1}
    assert ndcg_at_k(["b", "a"], small, 2) == pytest.approx(
        (1 + 7 / math.log2(3)) / (7 + 1 / math.log2(3))
    )
    report = evaluate_rankings({"q": huge}, {"q": _ranking("q", ["b", "a"])}, ks=[1, 2])
    assert report.mean["ndcg@1"] == 0.0 and 0.0 <= report.mean["ndcg@2"] < 0.7
    assert math.isfinite(report.mean["ndcg@2"])


def test_edge_cases_of_the_definitions() -> None:
    grades = {"a": 2, "b": 1, "n": 0, "neg": -1}
    # P@k divides by k even when fewer documents were retrieved.
    assert precision_at_k(["a"], grades, 10) == pytest.approx(0.1)
    # The threshold decides what counts as relevant for binary metrics ...
    assert recall_at_k(["b"], grades, 1, threshold=2) == 0.0
    assert recall_at_k(["a"], grades, 1, threshold=2) == 1.0
    assert hit_rate_at_k(["n", "b"], grades, 1) == 0.0
    assert hit_rate_at_k(["n", "b"], grades, 2) == 1.0
    # ... but not NDCG, whose gains are the grades; negative grades gain nothing.
    assert ndcg_at_k(["neg", "a", "b"], grades, 3) == pytest.approx(
        (3 / math.log2(3) + 1 / 2) / (3 + 1 / math.log2(3))
    )
    # R-precision with fewer than R documents retrieved still divides by R.
    assert r_precision(["a"], grades) == pytest.approx(0.5)
    # No relevant documents: every metric is 0, never NaN.
    assert average_precision(["a"], {"a": 0}) == 0.0
    assert ndcg_at_k(["a"], {"a": 0}, 5) == 0.0
    assert recall_at_k([], {}, 5) == 0.0
    with pytest.raises(ValueError):
        precision_at_k(["a"], grades, 0)
    with pytest.raises(ValueError):
        precision_at_k(["a"], grades, 1, threshold=0)


def test_run_ties_follow_trec_eval_order() -> None:
    # Equal scores: trec_eval orders by document id descending, so "b" comes before "a".
    qrels = {"q": {"a": 1}}
    report = evaluate_run(qrels, {"q": {"a": 1.0, "b": 1.0}}, ks=[1])
    assert report.per_query["q"]["mrr"] == 0.5
    assert trec_order({"a": 1.0, "b": 1.0, "c": 2.0}) == [("c", 2.0), ("b", 1.0), ("a", 1.0)]
    # The same documents as rankings keep the given order exactly.
    same = evaluate_rankings(qrels, {"q": _ranking("q", ["a", "b"])}, ks=[1])
    assert same.per_query["q"]["mrr"] == 1.0


def test_missing_and_extra_queries_are_counted() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}
    run = {"q1": {"a": 1.0}, "q9": {"a": 1.0}}
    with pytest.warns(DataWarning) as record:
        report = evaluate_run(qrels, run, ks=[1])
    messages = " | ".join(str(w.message) for w in record)
    assert "1 run queries are not in the qrels" in messages
    assert "2 judged queries have no ranking" in messages
    assert "no document of grade >= 1" in messages
    assert report.n_queries == 3
    assert report.queries_without_ranking == 2
    assert report.ignored_run_queries == 1
    assert set(report.per_query) == {"q1", "q2", "q3"}
    assert all(v == 0.0 for v in report.per_query["q2"].values())
    assert report.mean["precision@1"] == pytest.approx(1 / 3)
    with pytest.raises(DataError):
        evaluate_run({}, run)


@pytest.mark.parametrize("skewed", [False, True])
def test_engine_equals_reference_functions_on_random_graded_runs(skewed: bool) -> None:
    # skewed: one very long run among short ones, which takes the engine's lexsort path
    # instead of its padded per-row sort.
    rng = np.random.default_rng(7)
    ks = [1, 2, 5, 10, 50]
    pool = [f"d{i:03d}" for i in range(120)] + ["é1", "Z", "d1", "d10"]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(80):
        judged = rng.choice(pool, size=int(rng.integers(1, 25)), replace=False)
        qrels[f"q{q}"] = {str(d): int(rng.integers(-1, 4)) for d in judged}
        depth = (
            (len(pool) if q == 0 else int(rng.integers(0, 4)))
            if skewed
            else int(rng.integers(0, 60))
        )
        retrieved = rng.choice(pool, size=depth, replace=False)
        run[f"q{q}"] = {str(d): float(rng.integers(0, 6)) for d in retrieved}  # many ties
    for threshold in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            report = evaluate_run(qrels, run, ks=ks, relevance_threshold=threshold, ci=False)
        for q, grades in qrels.items():
            ranked = [d for d, _ in trec_order(run[q])]
            got = report.per_query[q]
            t = threshold
            expected = {
                "mrr": reciprocal_rank(ranked, grades, threshold=t),
                "map": average_precision(ranked, grades, threshold=t),
                "r_precision": r_precision(ranked, grades, threshold=t),
            }
            for k in ks:
                expected |= {
                    f"precision@{k}": precision_at_k(ranked, grades, k, t),
                    f"recall@{k}": recall_at_k(ranked, grades, k, t),
                    f"f1@{k}": f1_at_k(ranked, grades, k, t),
                    f"hit_rate@{k}": hit_rate_at_k(ranked, grades, k, t),
                    f"mrr@{k}": reciprocal_rank(ranked, grades, k, t),
                    f"map@{k}": average_precision(ranked, grades, k, t),
                    f"ndcg@{k}": ndcg_at_k(ranked, grades, k),
                    f"ndcg_linear@{k}": ndcg_at_k(ranked, grades, k, gain="linear"),
                }
            assert set(got) == set(expected) == set(metric_keys(ks))
            for key, value in expected.items():
                assert got[key] == pytest.approx(value, abs=1e-12), (q, key)


def test_bootstrap_columns_equal_bootstrap_ci_per_metric() -> None:
    rng = np.random.default_rng(3)
    values = rng.random((257, 4))
    values[:, 3] = 0.5
    intervals = bootstrap_columns(values, seed=11)
    for j, (lo, hi) in enumerate(intervals):
        ref_lo, ref_hi = bootstrap_ci(values[:, j], seed=11)
        assert lo == pytest.approx(ref_lo, abs=1e-12)
        assert hi == pytest.approx(ref_hi, abs=1e-12)
    assert intervals[3] == pytest.approx((0.5, 0.5))
    report = evaluate_run(
        {"q1": {"a": 1}, "q2": {"a": 1}}, {"q1": {"a": 1.0}, "q2": {"b": 1.0}}, ks=[1]
    )
    assert report.ci["precision@1"] == pytest.approx(bootstrap_ci([1.0, 0.0]))
    assert report.to_json_dict()["ci"]["precision@1"] == list(report.ci["precision@1"])


def test_rankings_helpers_and_bad_arguments() -> None:
    r = _ranking("q", ["a", "b"])
    assert rankings_to_run({"q": r}) == {"q": {"a": 0.0, "b": 1.0}}
    chunked = Ranking(
        query_id="q",
        docs=[
            ScoredDoc(doc_id=i, score=s) for i, s in [("d1#2", 0.9), ("d2#0", 0.8), ("d1#0", 0.7)]
        ],
    )
    doc_level = to_document_level(chunked, {"d1#2": "d1", "d2#0": "d2", "d1#0": "d1"})
    assert doc_level.doc_ids == ["d1", "d2"]
    assert [d.score for d in doc_level.docs] == [0.9, 0.8]
    with pytest.raises(DataError, match="more than once"):
        evaluate_rankings({"q": {"a": 1}}, {"q": _ranking("q", ["a", "a"])})
    with pytest.raises(DataError, match="non-finite"):
        evaluate_run({"q": {"a": 1}}, {"q": {"a": float("nan")}})
    with pytest.raises(ConfigError):
        evaluate_run({"q": {"a": 1}}, {"q": {"a": 1.0}}, ks=[0])
    with pytest.raises(ConfigError):
        evaluate_run({"q": {"a": 1}}, {"q": {"a": 1.0}}, relevance_threshold=0)
