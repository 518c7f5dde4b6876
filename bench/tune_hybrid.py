"""Tune the hybrid + late-interaction pipeline on SciFact *train* qrels; report it on *test*.

    .venv/bin/python bench/tune_hybrid.py [--home DIR]

Parameters, chosen by mean NDCG@10 over the 809 train queries (the 300 test queries are never
looked at while choosing):

- ``w``: dense weight of min-max score fusion, fused = w * mm(dense) + (1 - w) * mm(bm25), over
  each retriever's top 100;
- ``depth``: how many fused documents the late-interaction reranker re-orders;
- ``keep``: interpolation with the first stage inside the re-ordered head,
  final = (1 - keep) * mm(maxsim) + keep * mm(fused) (``Pipeline`` stage option ``keep``).

Every score comes from ragjudge's own components (``build_retriever``, ``build_reranker``);
the grid only recombines them. The test figures of the chosen setting are then measured again
through ``Pipeline`` by ``bench/bench_retrieval.py --phases scifact``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from typing import Any

from common import DATA, DEFAULT_HOME, ROOT, prepare

RESULTS = ROOT / "bench" / "results" / "tune_hybrid.json"
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
DEPTHS = (10, 20, 30)
KEEPS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)


class Features:
    """Per query: the dense and bm25 top 100 and the MaxSim score of every candidate; a
    setting is then recombined with ``fusion.minmax`` and ``pipeline.interpolate``."""

    def __init__(self, split: str) -> None:
        from ragjudge.io import load_beir
        from ragjudge.retrieval import build_reranker, build_retriever
        from ragjudge.schema import Ranking, ScoredDoc

        ts = load_beir(DATA / "scifact", split)
        self.queries = {c.id: c.question for c in ts.cases}
        self.qrels = {c.id: dict(c.relevant) for c in ts.cases}
        dense, bm25 = build_retriever("dense"), build_retriever("bm25")
        dense.index(ts.documents)
        bm25.index(ts.documents)
        self.dense = dense.retrieve(self.queries, 100)
        self.bm25 = bm25.retrieve(self.queries, 100)
        li = build_reranker("late-interaction")
        li.index(ts.documents)
        self.maxsim: dict[str, dict[str, float]] = {}
        t0 = time.perf_counter()
        for i, q in enumerate(self.queries):
            cands = sorted({d for w in WEIGHTS for d in self.fused(q, w).top(max(DEPTHS)).doc_ids})
            ranking = Ranking(query_id=q, docs=[ScoredDoc(doc_id=d, score=0.0) for d in cands])
            reranked = li.rerank(self.queries[q], ranking, len(cands))
            self.maxsim[q] = {d.doc_id: d.score for d in reranked.docs}
            if i % 100 == 0:
                elapsed = time.perf_counter() - t0
                print(f"{split}: maxsim {i}/{len(self.queries)} ({elapsed:.0f}s)", file=sys.stderr)

    def fused(self, q: str, w: float) -> Any:
        """Min-max fusion w * mm(dense) + (1 - w) * mm(bm25), as ``HybridRetriever``."""
        from ragjudge.retrieval.base import make_ranking
        from ragjudge.retrieval.fusion import minmax

        scores = minmax([self.dense[q], self.bm25[q]], (w, 1 - w))
        return make_ranking(q, scores.items(), len(scores))

    def order(self, q: str, w: float, depth: int, keep: float) -> Any:
        """The fused list with its top ``depth`` re-ordered as a ``(reranker, depth, keep)``
        stage of ``Pipeline`` does."""
        from ragjudge.retrieval.pipeline import _with_tail, interpolate
        from ragjudge.schema import Ranking, ScoredDoc

        fused = self.fused(q, w)
        head = fused.top(depth)
        by_maxsim = Ranking(
            query_id=q,
            docs=sorted(
                (ScoredDoc(doc_id=d, score=self.maxsim[q][d]) for d in head.doc_ids),
                key=lambda d: -d.score,
            ),
        )
        return _with_tail(interpolate(by_maxsim, head, keep), fused)

    def score(self, w: float, depth: int, keep: float | None) -> float:
        """Mean NDCG@10 of the setting (``keep`` None: the fused list alone)."""
        from ragjudge.metrics import evaluate_rankings

        rankings = {
            q: self.fused(q, w) if keep is None else self.order(q, w, depth, keep)
            for q in self.queries
        }
        report = evaluate_rankings(self.qrels, rankings, ks=[10], ci=False)
        return float(report.mean["ndcg@10"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", default=DEFAULT_HOME)
    args = ap.parse_args()
    if not prepare(args.home):
        return
    train = Features("train")
    grid: list[dict[str, Any]] = []
    for w in WEIGHTS:
        grid.append({"w": w, "depth": 0, "keep": None, "train": train.score(w, 0, None)})
    for w, depth, keep in itertools.product(WEIGHTS, DEPTHS, KEEPS):
        grid.append({"w": w, "depth": depth, "keep": keep, "train": train.score(w, depth, keep)})
    best_fusion = max((g for g in grid if g["keep"] is None), key=lambda g: g["train"])
    best = max((g for g in grid if g["keep"] is not None), key=lambda g: g["train"])
    test = Features("test")
    rows = {
        "hybrid minmax w=0.5 (untuned)": (0.5, 0, None),
        f"hybrid minmax w={best_fusion['w']} (tuned)": (best_fusion["w"], 0, None),
        f"minmax w={best['w']} + late-interaction@{best['depth']} keep={best['keep']} (tuned)": (
            best["w"],
            best["depth"],
            best["keep"],
        ),
    }
    print(f"{'setting':55s} {'train':>8s} {'test':>8s}")
    out = {"grid": grid, "chosen": {"fusion": best_fusion, "rerank": best}, "test": {}}
    for label, (w, depth, keep) in rows.items():
        tr = train.score(w, depth, keep)
        te = test.score(w, depth, keep)
        out["test"][label] = te
        print(f"{label:55s} {tr:8.4f} {te:8.4f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
