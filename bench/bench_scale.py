"""Past one process: the Ray executor against the in-process one on this machine.

Three measurements, each against its peer measured in the same run:

1. offline judging of N items (default 2,000; the offline judges named by ``--judges``):
   in process, then on Ray with 1 and 2 workers; throughput and the ratio to in-process
   (Ray's overhead at 1 worker: target under 15%). Every configuration starts with a cold
   embedding cache (its own state folder), so each encodes the same sentences.
2. corpus encoding of SciFact (5,183 abstracts, the bundled MiniLM): ``DenseRetriever.index``
   in process against ``ragjudge.distributed.encode.encode_corpus`` on 2 Ray workers, both cold.
3. LLM judging of N items (answer relevancy, one call each) against the local test server
   keeping ``--rpm`` (its own bucket, like a provider's) with ``RAGJUDGE_RPM`` set to the same
   limit: achieved rate (first to last request) with 1 and 2 Ray workers and in process, and the
   requests the server refused as over the limit (target: within 5% of the limit, 0 over).

Items for 1 and 3 are built from SciFact: the question is a title, the answer the abstract's
first sentence (``i`` mod 3 = 1: the next abstract's, unsupported), the contexts the
abstract's first two sentences and the next abstract's first (short items: about 4 sentences
to encode each, so that 2,000 cold items fit in minutes).

    nice -n 10 .venv/bin/python bench/bench_scale.py [--items 2000] [--rpm 6000] [--skip ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.common import DATA  # noqa: E402

SCIFACT = DATA / "scifact" / "corpus.jsonl"


def abstracts(limit: int | None = None) -> list[dict[str, str]]:
    rows = []
    with SCIFACT.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("text", "").strip():
                rows.append(row)
            if limit is not None and len(rows) >= limit:
                break
    return rows


def sentences(text: str, n: int) -> str:
    return " ".join(re.split(r"(?<=[.!?])\s+", text.strip())[:n])


def items(n: int) -> list[object]:
    from ragjudge.schema import JudgeInput

    docs = abstracts(n + 2)
    out = []
    for i in range(n):
        doc, nxt = docs[i], docs[i + 1]
        answer = sentences(nxt["text"] if i % 3 == 1 else doc["text"], 1)
        contexts = [sentences(doc["text"], 2), sentences(nxt["text"], 1)]
        out.append(JudgeInput(id=f"i{i}", question=doc["title"], answer=answer, contexts=contexts))
    return out


def fresh_home() -> str:
    home = tempfile.mkdtemp(prefix="bench_scale_")
    os.environ["RAGJUDGE_HOME"] = home
    return home


def timed(label: str, fn: object) -> tuple[float, object]:
    t0 = time.perf_counter()
    got = fn()  # type: ignore[operator]
    dt = time.perf_counter() - t0
    print(f"  {label}: {dt:.1f} s", flush=True)
    return dt, got


def offline_judging(n: int, names: list[str]) -> None:
    import torch

    from ragjudge.distributed.jobs import judge_on_ray
    from ragjudge.judges.registry import build_judges
    from ragjudge.judges.runner import run_judges

    batch = items(n)
    print(f"1. offline judging: {n} items x {', '.join(names)}", flush=True)
    # A Ray worker holds one CPU and Ray gives it one math thread: the in-process peer runs
    # with one too (with the default two, another busy process on the 2 cores makes its
    # spinning OpenMP threads far slower: see docs/benchmarks.md).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    fresh_home()
    base, ref = timed(
        "in process",
        lambda: asyncio.run(
            run_judges(build_judges(names, "offline"), batch, concurrency=4, progress=False)
        ),
    )
    torch.set_num_threads(threads)
    scores = {k: [r.score for r in v] for k, v in ref.items()}  # type: ignore[attr-defined]
    for workers in (1, 2):
        fresh_home()
        dt, got = timed(
            f"Ray, {workers} worker(s)",
            lambda w=workers: judge_on_ray(
                names, "offline", [], batch, address=None, num_workers=w, concurrency=4
            ),
        )
        differ = sum(
            a != b
            for k, v in got.items()  # type: ignore[attr-defined]
            for a, b in zip(scores[k], [r.score for r in v], strict=True)
        )
        print(
            f"    {n / dt:.1f} items/s against {n / base:.1f} in process: throughput ratio "
            f"{base / dt:.2f} (overhead {dt / base - 1:+.1%}); scores differing from the "
            f"in-process ones: {differ} of {n * len(names)}",
            flush=True,
        )


def encoding(limit: int | None) -> None:
    from ragjudge.distributed.encode import encode_corpus
    from ragjudge.retrieval.dense import DenseRetriever
    from ragjudge.schema import Document

    docs = [
        Document(id=r["_id"], title=r.get("title", ""), text=r["text"]) for r in abstracts(limit)
    ]
    print(f"2. corpus encoding: {len(docs)} SciFact abstracts (MiniLM)", flush=True)
    fresh_home()
    dense = DenseRetriever()
    base, _ = timed("in process (DenseRetriever.index)", lambda: dense.index(docs))
    fresh_home()
    dt, _ = timed(
        "Ray Data, 2 workers (encode_corpus)",
        lambda: encode_corpus(docs, "plain", dense.encoder.name, 2),
    )
    print(
        f"    {len(docs) / dt:.1f} docs/s against {len(docs) / base:.1f} in process: "
        f"ratio {base / dt:.2f}",
        flush=True,
    )


def llm_rate(n: int, rpm: int) -> None:
    from ragjudge.distributed.jobs import judge_on_ray
    from ragjudge.judges.registry import build_judges
    from ragjudge.judges.runner import run_judges
    from ragjudge.testing.server import FakeLLMServer

    batch = items(n)
    print(f"3. LLM judging at a {rpm} rpm limit: {n} items, answer relevancy", flush=True)
    runs = [("in process", 0), ("Ray, 1 worker", 1), ("Ray, 2 workers", 2)]
    for label, workers in runs:
        fresh_home()  # a cold LLM cache: every item is a request
        with FakeLLMServer(rpm=rpm) as srv:
            os.environ.update(
                OPENAI_BASE_URL=srv.base_url,
                OPENAI_API_KEY="sk-bench",
                RAGJUDGE_MODEL="fake-model",
                RAGJUDGE_RPM=str(rpm),
                RAGJUDGE_MAX_CONCURRENCY="64",
            )
            if workers:
                judge_on_ray(
                    ["answer_relevancy"],
                    "llm",
                    [],
                    batch,
                    address=None,
                    num_workers=workers,
                    concurrency=64,
                )
            else:
                judges = build_judges(["answer_relevancy"], "llm", 64)
                asyncio.run(run_judges(judges, batch, concurrency=64, progress=False))
            stamps = sorted(r["t"] for r in srv.chat_requests())
            over = srv.stats()["over_rpm"]
        rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) * 60
        per_s = max(sum(t <= s < t + 1 for s in stamps) for t in stamps[:: max(1, n // 200)])
        print(
            f"  {label}: {len(stamps)} requests, {rate:.0f} rpm achieved = {rate / rpm:.1%} of "
            f"the limit; busiest second {per_s} (limit {rpm / 60:g}/s); over the limit: {over}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--judges", default="faithfulness,answer_relevancy")
    ap.add_argument("--docs", type=int, default=None, help="SciFact abstracts (default all)")
    ap.add_argument("--rpm", type=int, default=6000)
    ap.add_argument("--skip", nargs="*", default=[], choices=["offline", "encoding", "llm"])
    args = ap.parse_args()
    if not SCIFACT.exists():
        print(f"SciFact not found at {SCIFACT}; skipping", file=sys.stderr)
        return
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from ragjudge.distributed.cluster import connect

    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    connect(None, 2)
    if "offline" not in args.skip:
        offline_judging(args.items, args.judges.split(","))
    if "encoding" not in args.skip:
        encoding(args.docs)
    if "llm" not in args.skip:
        llm_rate(args.items, args.rpm)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
