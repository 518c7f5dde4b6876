"""Retrieval metric computation time: ragjudge vs pytrec_eval on the same runs, same process.

Runs: (1) BM25 (bm25s, k1=0.9, b=0.4, top 1000) over Cranfield, queries x qrels.trec;
(2) a synthetic run of --queries x --depth documents with tied scores (integer-valued) and 10
graded judgments per query. For each run both tools compute P@k, recall@k, MAP@k, NDCG@k
(linear) for k in 1,3,5,10,20,100 plus MRR, MAP and R-precision; ragjudge also computes F1@k,
hit rate@k, MRR@k and exponential-gain NDCG@k (it has no cheaper subset mode). Timings are the
best of --repeats; pytrec_eval's include building its RelevanceEvaluator from the qrels. The
per-query values of the shared measures are compared (max |difference|) so that equal work is
timed. ``ragjudge+CI`` adds the 95% bootstrap intervals of every mean (2000 resamples).

Usage: .venv/bin/python bench/bench_metrics.py [--queries 10000] [--depth 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ragjudge.io import DataWarning, load_cases, load_documents, read_trec_qrels
from ragjudge.metrics import evaluate_run
from ragjudge.schema import Qrels, Run

KS = [1, 3, 5, 10, 20, 100]
PAIRS = [("recip_rank", "mrr"), ("Rprec", "r_precision"), ("map", "map")] + [
    (f"{t}_{k}", f"{o}@{k}")
    for k in KS
    for t, o in (
        ("P", "precision"),
        ("recall", "recall"),
        ("map_cut", "map"),
        ("ndcg_cut", "ndcg_linear"),
    )
]
MEASURES = {"recip_rank", "Rprec", "map"} | {
    f"{m}.{','.join(map(str, KS))}" for m in ("P", "recall", "map_cut", "ndcg_cut")
}


def shared_data() -> Path:
    default = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    return Path(os.environ.get("RAGJUDGE_SHARED_DATA", default))


def cranfield_run(folder: Path) -> tuple[Qrels, Run]:
    import bm25s

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        docs = load_documents(folder / "corpus.jsonl", skip_empty=True)
    queries = load_cases(folder / "queries.jsonl")
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(
        bm25s.tokenize([d.text for d in docs], stopwords="en", show_progress=False),
        show_progress=False,
    )
    tokens = bm25s.tokenize([q.question for q in queries], stopwords="en", show_progress=False)
    idx, scores = retriever.retrieve(tokens, k=min(1000, len(docs)), show_progress=False)
    run = {
        q.id: {docs[int(i)].id: float(s) for i, s in zip(idx[n], scores[n], strict=True)}
        for n, q in enumerate(queries)
    }
    return read_trec_qrels(folder / "qrels.trec"), run


def synthetic_run(n_queries: int, depth: int, seed: int = 0) -> tuple[Qrels, Run]:
    rng = np.random.default_rng(seed)
    pool = [f"doc{i:06d}" for i in range(100_000)]
    qrels: Qrels = {}
    run: Run = {}
    for q in range(n_queries):
        picks = rng.choice(len(pool), size=depth + 5, replace=False)
        scores = rng.integers(0, 200, size=depth).astype(float).tolist()
        run[f"q{q}"] = dict(zip([pool[i] for i in picks[:depth]], scores, strict=True))
        judged = np.concatenate([picks[:5] if depth >= 5 else picks[:0], picks[depth : depth + 5]])
        qrels[f"q{q}"] = {
            pool[i]: int(g) for i, g in zip(judged, rng.integers(0, 4, judged.size), strict=True)
        }
    return qrels, run


def best_of(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def bench(name: str, qrels: Qrels, run: Run, repeats: int) -> dict[str, Any]:
    import pytrec_eval

    def peer() -> dict[str, dict[str, float]]:
        return pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)

    def ours(ci: bool) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            return evaluate_run(qrels, run, ks=KS, ci=ci)

    t_peer, theirs = best_of(peer, repeats)
    t_ours, report = best_of(lambda: ours(False), repeats)
    t_ci, _ = best_of(lambda: ours(True), max(1, repeats // 2))
    diff = max(abs(report.per_query[q][o] - v[t]) for q, v in theirs.items() for t, o in PAIRS)
    n_docs = sum(len(d) for d in run.values())
    return {
        "run": name,
        "queries": len(qrels),
        "docs": n_docs,
        "pytrec_eval_s": t_peer,
        "ragjudge_s": t_ours,
        "ragjudge_ci_s": t_ci,
        "speedup": t_peer / t_ours,
        "speedup_with_ci": t_peer / t_ci,
        "max_abs_diff": diff,
        "ragjudge_metrics": len(report.mean),
        "pytrec_measures": len(next(iter(theirs.values()))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="Also write the rows as JSON.")
    args = parser.parse_args()
    rows = []
    cran = shared_data() / "cranfield"
    if cran.is_dir():
        rows.append(bench("cranfield-bm25", *cranfield_run(cran), args.repeats))
    else:
        print(f"skipping Cranfield: {cran} is absent")
    rows.append(
        bench(
            f"synthetic-{args.queries}x{args.depth}",
            *synthetic_run(args.queries, args.depth),
            max(1, args.repeats - 1),
        )
    )
    header = (
        f"{'run':<24}{'queries':>8}{'docs':>11}{'pytrec_eval':>13}{'ragjudge':>10}{'+CI':>9}"
        f"{'speedup':>9}{'w/ CI':>8}{'max|diff|':>11}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['run']:<24}{r['queries']:>8}{r['docs']:>11}{r['pytrec_eval_s']:>12.3f}s"
            f"{r['ragjudge_s']:>9.3f}s{r['ragjudge_ci_s']:>8.3f}s{r['speedup']:>8.2f}x"
            f"{r['speedup_with_ci']:>7.2f}x{r['max_abs_diff']:>11.1e}"
        )
    print(
        f"speedup = pytrec_eval time / ragjudge time (>1: ragjudge faster); ragjudge computes "
        f"{rows[-1]['ragjudge_metrics']} metrics per query, "
        f"pytrec_eval {rows[-1]['pytrec_measures']}."
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
