"""Cost of a k-sweep against separate single-k runs, with the five LLM judges.

Both sides run the same pipeline (BM25 retrieval, the chosen generator, the five LLM judges)
through the real client over HTTP to the local test server (0.05 s latency), each run in a fresh
state folder (own LLM cache). Peer: ten separate runs at k = 1, ..., 10 (what a user without a
sweep does; naive cost 10x one run). Printed: judge calls, tokens and wall time per k for both,
and the ratio of the sweep's judge calls to one single-k run's (target: at most 4x).

    .venv/bin/python bench/bench_sweep_cost.py [--cases 40] [--generator extractive|chat]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragjudge.testing.server import FakeLLMServer  # noqa: E402

KS = list(range(1, 11))


def dataset_section(cases: int) -> dict[str, object]:
    demo = REPO / "datasets" / "demo"
    if (demo / "queries.jsonl").exists():
        return {"path": str(demo), "sample": cases}
    shared = (
        Path(os.environ.get("RAGJUDGE_SHARED_DATA", REPO.parent / "shared" / "data"))
        / "squad_v2_dev_subset"
    )
    return {
        "path": str(shared / "dev-v2.0-first5articles.json"),
        "format": "squad",
        "sample": cases,
    }


def judge_usage(ledger: list[dict[str, object]]) -> tuple[int, int, int]:
    """(judge calls sent, cache hits, tokens) from a run's stored ledger."""
    calls = hits = toks = 0
    for e in ledger:
        if e.get("kind") != "call" or not str(e.get("prompt", "")).startswith("judges/"):
            continue
        if e.get("cached"):
            hits += 1
            continue
        calls += 1 + int(bool(e.get("repair")))
        toks += int(e.get("prompt_tokens", 0)) + int(e.get("completion_tokens", 0))
    return calls, hits, toks


def one_run(data: dict[str, object], ks: list[int], generator: str) -> dict[str, object]:
    from ragjudge.store import open_store
    from ragjudge.sweep.config import SweepConfig
    from ragjudge.sweep.run import run_sweep

    os.environ["RAGJUDGE_HOME"] = tempfile.mkdtemp(prefix="bench_sweep_")
    cfg = SweepConfig.model_validate(
        {
            "dataset": data,
            "retriever": {"kind": "bm25"},
            "generator": {"kind": generator},
            "judges": {"backend": "llm"},
            "ks": ks,
            "concurrency": 16,
        }
    )
    store = open_store()
    t0 = time.perf_counter()
    out = run_sweep(cfg, store=store)
    wall = time.perf_counter() - t0
    calls, hits, toks = judge_usage(store.ledger(out.run_id))
    per_k: dict[int, dict[str, float]] = {
        k: {"calls": 0, "tokens": 0, "seconds": out.timings.get(f"judge@{k}", 0.0)} for k in ks
    }
    for r in store.judge_results(out.run_id):
        u = r.result.usage
        per_k[r.k]["calls"] += u.calls
        per_k[r.k]["tokens"] += u.prompt_tokens + u.completion_tokens
    return {
        "calls": calls,
        "hits": hits,
        "tokens": toks,
        "wall": wall,
        "per_k": per_k,
        "prefix_seconds": out.timings.get("judge:prefix", 0.0),
        "best_k": out.summary.choice.best_k,
        "cases": out.summary.n_cases,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--generator", default="extractive", choices=["extractive", "chat"])
    ap.add_argument("--latency", type=float, default=0.05)
    args = ap.parse_args()
    data = dataset_section(args.cases)
    with FakeLLMServer(latency=args.latency) as server:
        os.environ.update(
            OPENAI_BASE_URL=server.base_url,
            OPENAI_API_KEY="sk-bench",
            RAGJUDGE_MODEL="gpt-4o-mini",  # priced, so that cost is visible
            RAGJUDGE_MAX_CONCURRENCY="16",
            HF_HUB_OFFLINE="1",
        )
        one_run(data, [1], args.generator)  # warm-up: imports, model load
        sweep = one_run(data, KS, args.generator)
        singles = {k: one_run(data, [k], args.generator) for k in KS}

    n = sweep["cases"]
    print(f"data: {data['path']} ({n} cases), generator {args.generator}, five LLM judges")
    print(f"server latency {args.latency:g} s, concurrency 16; each run with its own cache\n")
    print(
        "| k | sweep judge calls | sweep tokens | sweep judge s | single-k calls | "
        "single-k tokens | single-k wall s |"
    )
    print("|---|---|---|---|---|---|---|")
    for k in KS:
        s = sweep["per_k"][k]
        one = singles[k]
        print(
            f"| {k} | {s['calls']:.0f} | {s['tokens']:.0f} | {s['seconds']:.2f} | {one['calls']} "
            f"| {one['tokens']} | {one['wall']:.2f} |"
        )
    single_calls = [singles[k]["calls"] for k in KS]
    mean_one = sum(single_calls) / len(KS)
    total_sep = sum(single_calls)
    sep_tokens = sum(singles[k]["tokens"] for k in KS)
    sep_wall = sum(singles[k]["wall"] for k in KS)
    print(
        f"\nprefix judges (context recall + precision, once at k=10): "
        f"{sweep['prefix_seconds']:.2f} s, counted at k=10 above"
    )
    print(
        f"sweep 1..10: {sweep['calls']} judge calls, {sweep['tokens']} tokens, "
        f"{sweep['wall']:.1f} s wall (cache hits {sweep['hits']})"
    )
    print(f"ten single-k runs: {total_sep} judge calls, {sep_tokens} tokens, {sep_wall:.1f} s wall")
    print(
        f"ratio sweep / one single-k run (mean over k): calls {sweep['calls'] / mean_one:.2f}x "
        f"(target <= 4x; naive 10x), tokens {sweep['tokens'] / (sep_tokens / len(KS)):.2f}x, "
        f"wall {sweep['wall'] / (sep_wall / len(KS)):.2f}x"
    )
    print(
        f"ratio sweep / ten single-k runs: calls {sweep['calls'] / total_sep:.2f}, "
        f"tokens {sweep['tokens'] / sep_tokens:.2f}, wall {sweep['wall'] / sep_wall:.2f}"
    )
    print(f"best k: sweep {sweep['best_k']}")


if __name__ == "__main__":
    main()
