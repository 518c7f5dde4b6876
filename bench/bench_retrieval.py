"""Retrieval benchmark: SciFact / Cranfield effectiveness, timings, cache effect, encoding speed.

    .venv/bin/python bench/bench_retrieval.py [--phases speed,scifact,cranfield,int8]
        [--sample 300] [--depth 20] [--home DIR]

Phases (each prints its table and appends to bench/results/retrieval.json):
- ``speed``: the same fixed sample of SciFact abstracts encoded by plain sentence-transformers
  ``encode`` (its default batch of 32, and a batch of 8 as a second peer) and by ragjudge's ONNX
  Runtime encoders (fp32, int8), interleaved round by round
  so load from other processes hits each alike; texts/s and ratio to plain.
- ``scifact`` / ``cranfield``: NDCG@10, Recall@100 (SciFact) or MAP, NDCG@10 (Cranfield) of
  bm25, dense, hybrid (RRF k=60, min-max), hybrid + late-interaction rerank of the top
  ``depth``, and the setting tuned on SciFact train by ``bench/tune_hybrid.py``;
  index and query seconds; the dense index time of a second run (embedding cache hit).
- ``int8``: SciFact dense NDCG@10 with the int8 ONNX encoder beside the plain model.

Document vectors are cached under ``--home`` (default ``.ragjudge/bench``), so a repeated run
encodes nothing; the first run primes the cache.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from common import DATA, DEFAULT_HOME, ROOT, prepare

RESULTS = ROOT / "bench" / "results" / "retrieval.json"
PUBLISHED = {"bm25": 0.665, "dense": 0.645}
PLAIN = "plain sentence-transformers encode"
"""The reference of the encoding-speed phase: ``SentenceTransformer.encode`` with its defaults."""


def record(key: str, value: Any) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data[key] = value
    RESULTS.write_text(json.dumps(data, indent=1))


def table(title: str, header: list[str], rows: list[list[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for h in header:
        t.add_column(h, justify="right" if h != header[0] else "left")
    for r in rows:
        t.add_row(*[f"{c:.4f}" if isinstance(c, float) else str(c) for c in r])
    Console().print(t)


def phase_speed(sample: int, rounds: int) -> None:
    from ragjudge.embedding import load_encoder, load_onnx_encoder
    from ragjudge.io import load_documents
    from ragjudge.retrieval.base import doc_text

    docs = load_documents(DATA / "scifact" / "corpus.jsonl", skip_empty=True)
    rnd = random.Random(0)
    texts = [doc_text(d) for d in rnd.sample(docs, sample)]
    model = load_encoder().model

    def plain(batch_size: int) -> Any:
        return lambda t: model.encode(t, batch_size=batch_size, normalize_embeddings=True)

    encoders = {
        PLAIN: plain(32),  # sentence-transformers' default batch size
        "plain, batch 8": plain(8),
        "onnx fp32": load_onnx_encoder(False).encode,
        "onnx int8": load_onnx_encoder(True).encode,
    }
    for enc in encoders.values():
        enc(texts[:8])
    secs = dict.fromkeys(encoders, 0.0)
    vecs: dict[str, Any] = {}
    chunk = (len(texts) + rounds - 1) // rounds
    import numpy as np

    for r in range(rounds):
        part = texts[r * chunk : (r + 1) * chunk]
        for name, enc in encoders.items():
            t0 = time.perf_counter()
            v = enc(part)
            secs[name] += time.perf_counter() - t0
            vecs.setdefault(name, []).append(v)
    ref = np.vstack(vecs[PLAIN])
    rows = []
    out = {}
    for name in encoders:
        v = np.vstack(vecs[name])
        cos = (v * ref).sum(axis=1)
        rate = len(texts) / secs[name]
        ratio = secs[PLAIN] / secs[name]
        rows.append([name, rate, ratio, float(cos.mean()), float(cos.min())])
        out[name] = {"texts_per_s": rate, "ratio": ratio, "cos_mean": float(cos.mean())}
    table(
        f"encoding {len(texts)} SciFact abstracts (max_seq_length 256), "
        f"{rounds} interleaved rounds",
        ["encoder", "texts/s", "x plain", "cos to plain (mean)", "cos (min)"],
        rows,
    )
    record("speed", {"sample": len(texts), **out})


def _metrics(qrels: Any, rankings: Any, ks: list[int]) -> dict[str, float]:
    from ragjudge.metrics import evaluate_rankings

    return dict(evaluate_rankings(qrels, rankings, ks=ks, ci=False).mean)


def phase_collection(name: str, depth: int, keys: list[str]) -> None:
    from ragjudge.io import load_beir
    from ragjudge.retrieval import Pipeline, build_reranker, build_retriever

    folder = DATA / name
    ts = load_beir(folder, "test") if (folder / "qrels").is_dir() else None
    if ts is None:
        ts = _cranfield(folder)
    queries = {c.id: c.question for c in ts.cases}
    qrels = {c.id: dict(c.relevant) for c in ts.cases}
    print(f"{name}: {len(ts.documents)} documents, {len(queries)} queries", file=sys.stderr)
    li = build_reranker("late-interaction")
    li_blend = build_reranker("late-interaction", blend=0.5)
    pipelines: list[tuple[str, Any]] = [
        ("bm25", build_retriever("bm25")),
        ("dense", build_retriever("dense")),
        ("hybrid (rrf)", build_retriever("hybrid")),
        ("hybrid (minmax)", build_retriever("hybrid", fusion="score")),
        (f"hybrid + late-interaction@{depth}", Pipeline(build_retriever("hybrid"), [(li, depth)])),
        (
            f"hybrid + late-interaction(blend 0.5)@{depth}",
            Pipeline(build_retriever("hybrid"), [(li_blend, depth)]),
        ),
        (
            # tuned on SciFact train qrels by bench/tune_hybrid.py (w 0.4, depth 30, keep 0.4)
            "hybrid (minmax w 0.4) + late-interaction@30, keep 0.4",
            Pipeline(
                build_retriever("hybrid", fusion="score", weights=(0.4, 0.6)), [(li, 30, 0.4)]
            ),
        ),
    ]
    rows, out = [], {}
    for label, p in pipelines:
        t0 = time.perf_counter()
        p.index(ts.documents)
        t_index = time.perf_counter() - t0
        t0 = time.perf_counter()
        rankings = p.retrieve(queries, 100)
        t_query = time.perf_counter() - t0
        m = _metrics(qrels, rankings, [10, 100])
        vals = [m[k] for k in keys]
        pub = PUBLISHED.get(label, "") if name == "scifact" else ""
        rows.append([label, *vals, pub, round(t_index, 1), round(t_query, 1)])
        out[label] = {**{k: m[k] for k in keys}, "index_s": t_index, "query_s": t_query}
        print(f"{label}: {rows[-1]}", file=sys.stderr, flush=True)
        record(name, out)
    t0 = time.perf_counter()
    again = build_retriever("dense")
    again.index(ts.documents)
    t_again = time.perf_counter() - t0
    out["dense second index"] = {"index_s": t_again, "encoded": again.encoded}  # type: ignore[attr-defined]
    table(
        f"{name}: {len(queries)} queries (2-core machine)",
        ["pipeline", *keys, "published", "index s", "query s"],
        rows,
    )
    print(
        f"dense index, second run (cache): {t_again:.1f}s, {again.encoded} documents encoded",  # type: ignore[attr-defined]
    )
    record(name, out)


def _cranfield(folder: Path) -> Any:
    from ragjudge.io import load_cases, load_documents, read_trec_qrels
    from ragjudge.schema import TestSet

    docs = load_documents(folder / "corpus.jsonl", skip_empty=True)
    cases = load_cases(folder / "queries.jsonl", relevant_field=None)
    qrels = read_trec_qrels(folder / "qrels.trec")
    cases = [c.model_copy(update={"relevant": qrels[c.id]}) for c in cases if qrels.get(c.id)]
    return TestSet(name="cranfield", documents=docs, cases=cases)


def phase_int8() -> None:
    from ragjudge.io import load_beir
    from ragjudge.retrieval import build_retriever

    ts = load_beir(DATA / "scifact", "test")
    queries = {c.id: c.question for c in ts.cases}
    qrels = {c.id: dict(c.relevant) for c in ts.cases}
    rows, out = [], {}
    for enc in ("onnx-int8", "plain"):
        r = build_retriever("dense", encoder=enc)
        t0 = time.perf_counter()
        r.index(ts.documents)
        t_index = time.perf_counter() - t0
        m = _metrics(qrels, r.retrieve(queries, 100), [10, 100])
        rows.append([enc, m["ndcg@10"], m["recall@100"], round(t_index, 1)])
        out[enc] = {"ndcg@10": m["ndcg@10"], "recall@100": m["recall@100"], "index_s": t_index}
    table(
        "SciFact dense: plain vs int8 ONNX", ["encoder", "ndcg@10", "recall@100", "index s"], rows
    )
    record("int8", out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--phases", default="speed,scifact,cranfield,int8")
    ap.add_argument("--sample", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--home", default=DEFAULT_HOME)
    args = ap.parse_args()
    if not prepare(args.home):
        return
    for phase in args.phases.split(","):
        t0 = time.perf_counter()
        if phase == "speed":
            phase_speed(args.sample, args.rounds)
        elif phase == "scifact":
            phase_collection("scifact", args.depth, ["ndcg@10", "recall@100"])
        elif phase == "cranfield":
            phase_collection("cranfield", args.depth, ["map", "ndcg@10"])
        elif phase == "int8":
            phase_int8()
        print(f"[{phase}: {time.perf_counter() - t0:.0f}s]", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
