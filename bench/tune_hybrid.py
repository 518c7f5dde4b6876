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
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("RAGJUDGE_SHARED_DATA") or ROOT.parent / "shared" / "data")
RESULTS = ROOT / "bench" / "results" / "tune_hybrid.json"
WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
DEPTHS = (10, 20, 30)
KEEPS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)


def _mm(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    return {d: (s - lo) / (hi - lo) if hi > lo else 1.0 for d, s in scores.items()}


def _ndcg10(order: list[str], rel: dict[str, int]) -> float:
    from ragjudge.metrics import evaluate_rankings
    from ragjudge.schema import Ranking, ScoredDoc

    ranking = Ranking(
        query_id="q", docs=[ScoredDoc(doc_id=d, score=-i) for i, d in enumerate(order[:10])]
    )
    return float(evaluate_rankings({"q": rel}, {"q": ranking}, ks=[10], ci=False).mean["ndcg@10"])


class Features:
    """Per query: dense and bm25 top-100 scores and MaxSim of every candidate."""

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
        self.dense = {
            q: {d.doc_id: d.score for d in r.docs}
            for q, r in dense.retrieve(self.queries, 100).items()
        }
        self.bm25 = {
            q: {d.doc_id: d.score for d in r.docs}
            for q, r in bm25.retrieve(self.queries, 100).items()
        }
        li = build_reranker("late-interaction")
        li.index(ts.documents)
        self.maxsim: dict[str, dict[str, float]] = {}
        t0 = time.perf_counter()
        for i, q in enumerate(self.queries):
            cands = set()
            for w in WEIGHTS:
                cands.update(self.head(q, w, max(DEPTHS)))
            ranking = Ranking(
                query_id=q, docs=[ScoredDoc(doc_id=d, score=0.0) for d in sorted(cands)]
            )
            self.maxsim[q] = {
                d.doc_id: d.score for d in li.rerank(self.queries[q], ranking, len(cands)).docs
            }
            if i % 100 == 0:
                print(
                    f"{split}: maxsim {i}/{len(self.queries)} ({time.perf_counter() - t0:.0f}s)",
                    file=sys.stderr,
                    flush=True,
                )

    def fused(self, q: str, w: float) -> dict[str, float]:
        out: dict[str, float] = {}
        for scores, wi in ((self.dense[q], w), (self.bm25[q], 1 - w)):
            for d, s in _mm(scores).items():
                out[d] = out.get(d, 0.0) + wi * s
        return out

    def head(self, q: str, w: float, depth: int) -> list[str]:
        f = self.fused(q, w)
        return sorted(f, key=lambda d: (-f[d], d))[:depth]

    def order(self, q: str, w: float, depth: int, keep: float) -> list[str]:
        f = self.fused(q, w)
        ranked = sorted(f, key=lambda d: (-f[d], d))
        head = ranked[:depth]
        ms = _mm({d: self.maxsim[q][d] for d in head})
        fh = _mm({d: f[d] for d in head})
        final = {d: (1 - keep) * ms[d] + keep * fh[d] for d in head}
        return sorted(head, key=lambda d: (-final[d], ranked.index(d))) + ranked[depth:]

    def score(self, w: float, depth: int, keep: float | None) -> float:
        vals = []
        for q in self.queries:
            order = self.head(q, w, 100) if keep is None else self.order(q, w, depth, keep)
            vals.append(_ndcg10(order, self.qrels[q]))
        return sum(vals) / len(vals)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", default=str(ROOT / ".ragjudge" / "bench"))
    args = ap.parse_args()
    if not DATA.is_dir():
        print(f"shared data not found at {DATA}; skipping", file=sys.stderr)
        return
    os.environ["RAGJUDGE_HOME"] = args.home
    warnings.simplefilter("ignore")
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
