"""Parity with trec_eval (via pytrec_eval) to 1e-9 per query on runs over Cranfield and SciFact:
P_k, recall_k, recip_rank, map, map_cut_k, ndcg_cut_k (linear gain), Rprec and success_k.

Runs are built deterministically in the test: BM25 (bm25s) scores rounded to one decimal, so
that many documents tie, plus a random-integer-score run (ties everywhere). One judged query
gets an empty run and one none at all: pytrec_eval reports the first with zeros and leaves the
second out, where ragjudge counts it as zero.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import bm25s
import numpy as np
import pytest
import pytrec_eval

from ragjudge.io import DataWarning, load_beir, load_documents, read_trec_qrels
from ragjudge.metrics import evaluate_run
from ragjudge.schema import Qrels, Run

KS = [1, 3, 5, 10, 20, 100]


def _pairs() -> list[tuple[str, str]]:
    pairs = [("recip_rank", "mrr"), ("Rprec", "r_precision"), ("map", "map")]
    for k in KS:
        pairs += [
            (f"P_{k}", f"precision@{k}"),
            (f"recall_{k}", f"recall@{k}"),
            (f"map_cut_{k}", f"map@{k}"),
            (f"ndcg_cut_{k}", f"ndcg_linear@{k}"),
            (f"success_{k}", f"hit_rate@{k}"),
        ]
    return pairs


def _bm25_run(doc_ids: list[str], texts: list[str], queries: dict[str, str], depth: int) -> Run:
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    qids = list(queries)
    tokens = bm25s.tokenize([queries[q] for q in qids], stopwords="en", show_progress=False)
    idx, scores = retriever.retrieve(tokens, k=depth, show_progress=False, n_threads=1)
    return {
        q: {doc_ids[int(i)]: round(float(s), 1) for i, s in zip(idx[n], scores[n], strict=True)}
        for n, q in enumerate(qids)
    }


def _random_run(qrels: Qrels, doc_ids: list[str], seed: int) -> Run:
    rng = np.random.default_rng(seed)
    run: Run = {}
    for q, judged in qrels.items():
        pool = list(judged) + [doc_ids[int(i)] for i in rng.integers(0, len(doc_ids), 150)]
        run[q] = {d: float(rng.integers(0, 8)) for d in pool}
    return run


def _assert_parity(qrels: Qrels, run: Run, threshold: int = 1, min_ndcg: float = 0.0) -> int:
    qids = sorted(qrels)
    run = dict(run)
    run[qids[0]] = {}  # an empty ranking
    run.pop(qids[1], None)  # no ranking at all
    measures = {"recip_rank", "Rprec", "map"} | {
        f"{m}.{','.join(map(str, KS))}" for m in ("P", "recall", "map_cut", "ndcg_cut", "success")
    }
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=threshold)
    expected = evaluator.evaluate(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        report = evaluate_run(qrels, run, ks=KS, relevance_threshold=threshold, ci=False)
    assert report.n_queries == len(qrels)
    assert qids[0] in expected and qids[1] not in expected
    assert all(v == 0.0 for v in report.per_query[qids[1]].values())
    compared = 0
    for q, values in expected.items():
        got = report.per_query[q]
        for theirs, ours in _pairs():
            assert got[ours] == pytest.approx(values[theirs], abs=1e-9, rel=0), (q, theirs)
            compared += 1
    # The run did not just score zeros everywhere.
    assert report.mean["ndcg_linear@10"] > min_ndcg
    return compared


def test_parity_on_cranfield_graded(shared_data: Path) -> None:
    folder = shared_data / "cranfield"
    qrels = read_trec_qrels(folder / "qrels.trec")
    with pytest.warns(DataWarning, match="2 documents with an empty text"):
        docs = load_documents(folder / "corpus.jsonl", skip_empty=True)
    from ragjudge.io import load_cases

    queries = {c.id: c.question for c in load_cases(folder / "queries.jsonl")}
    assert len(queries) == 225 and len(qrels) == 225
    run = _bm25_run([d.id for d in docs], [d.text for d in docs], queries, depth=200)
    n = _assert_parity(qrels, run, min_ndcg=0.3)
    n += _assert_parity(
        qrels, run, threshold=3, min_ndcg=0.3
    )  # graded: only gains >= 3 count as relevant
    n += _assert_parity(qrels, _random_run(qrels, [d.id for d in docs], seed=1))
    assert n > 3 * 200 * 20


def test_parity_on_scifact(shared_data: Path) -> None:
    with pytest.warns(DataWarning, match="809 queries have no judgments in split 'test'"):
        testset = load_beir(shared_data / "scifact", split="test")
    assert len(testset.cases) == 300
    qrels = testset.qrels()
    doc_ids = [d.id for d in testset.documents]
    texts = [f"{d.title} {d.text}" for d in testset.documents]
    run = _bm25_run(doc_ids, texts, {c.id: c.question for c in testset.cases}, depth=100)
    _assert_parity(qrels, run, min_ndcg=0.6)
    _assert_parity(qrels, _random_run(qrels, doc_ids, seed=2))
