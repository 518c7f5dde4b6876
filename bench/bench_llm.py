"""Throughput, client CPU and fault tolerance of the LLM layer against the local test server.

The server (``ragjudge fake-llm``) runs in its own process with ``--latency`` seconds per
request; the client runs ``--calls`` structured calls (prompt ``test/sum``: add the integers
of the message; every result is checked against the true sum) with ``--cap`` requests in
flight.

Phases (peers measured in the same run):
1. raw SDK: ``openai.AsyncOpenAI.chat.completions.create`` behind an ``asyncio.Semaphore``,
   no validation, no cache, no ledger — the floor any layer on the SDK can reach;
2. ragjudge: ``LLMClient.structured`` (cache, ledger, strict validation, adaptive limit);
3. ragjudge re-run of the same calls: served from the cache (server requests counted);
4. faults: 20 % of requests answered 429 (Retry-After 0.2 s) and 5 % malformed, with the
   adaptive limit and, as peer, a fixed limit.

Target: phase 2 within 1.15x of the ideal ``calls x latency / cap``. Client CPU per call is
the main thread's CPU time (the server is another process) divided by calls.

    .venv/bin/python bench/bench_llm.py                 # 1,000 calls, latency 0.2 s, cap 16
    .venv/bin/python bench/bench_llm.py --calls 200     # quick
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]


class Sum(BaseModel):
    numbers: list[int]
    total: int


def messages(i: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "Add the integers of the message. Reply in JSON."},
        {"role": "user", "content": f"case {i}: {i % 97} plus {i * 7 % 101} plus 3"},
    ]


def expected(i: int) -> int:
    return i + i % 97 + i * 7 % 101 + 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server(latency: float, faults: str = "", retry_after: float = 0.2) -> Iterator[str]:
    port = free_port()
    args = [sys.executable, "-m", "ragjudge", "fake-llm", "--port", str(port)]
    args += ["--latency", str(latency), "--retry-after", str(retry_after)]
    if faults:
        args += ["--fault-rate", faults, "--seed", "11"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # the "fake LLM server on ..." line: bound and serving
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def stats(root: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{root}/stats") as resp:
        return dict(json.load(resp))


def reset(root: str) -> None:
    urllib.request.urlopen(urllib.request.Request(f"{root}/reset", method="POST")).close()


async def raw_sdk(base: str, calls: int, cap: int) -> tuple[float, float, int]:
    import openai

    client = openai.AsyncOpenAI(base_url=base, api_key="sk-bench", max_retries=0)
    sem = asyncio.Semaphore(cap)

    async def one(i: int) -> bool:
        async with sem:
            r = await client.chat.completions.create(
                model="fake-model",
                messages=messages(i),  # type: ignore[arg-type]
                extra_headers={"X-Ragjudge-Template": "test/sum@v1"},
            )
        return Sum.model_validate_json(r.choices[0].message.content or "").total == expected(i)

    await one(-1)  # warm the connection pool and imports outside the timing
    c0, t0 = time.thread_time(), time.perf_counter()
    ok = sum(await asyncio.gather(*(one(i) for i in range(calls))))
    wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
    await client.close()
    return wall, cpu, ok


async def ragjudge_run(
    base: str,
    calls: int,
    cap: int,
    *,
    adaptive: bool = True,
    attempts: int = 6,
    cache_path: Path | None = None,
) -> dict[str, Any]:
    """``calls`` structured calls through a fresh ``LLMClient`` (a fresh cache file unless
    ``cache_path`` is given)."""
    from ragjudge.llm import LLMClient, LLMSettings
    from ragjudge.schema import PromptRef

    settings = LLMSettings(
        base_url=base,
        api_key="sk-bench",
        model="fake-model",
        max_concurrency=cap,
        adaptive=adaptive,
        max_attempts=attempts,
        backoff_initial=0.05,
        backoff_max=2.0,
    )
    prompt = PromptRef(name="test/sum", version="v1")
    cache = Path(tempfile.mkdtemp(prefix="bench_llm_cache_")) / "cache.sqlite"
    async with LLMClient(settings, cache=cache_path or cache) as client:
        await client.chat([{"role": "user", "content": "warm"}], prompt=prompt)
        client.ledger = type(client.ledger)(client.ledger.prices)
        c0, t0 = time.thread_time(), time.perf_counter()
        results = await asyncio.gather(
            *(client.structured(messages(i), Sum, prompt=prompt) for i in range(calls))
        )
        wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
        row = client.ledger.summary(by=())[0]
    ok = sum(
        r.ok and r.value is not None and r.value.total == expected(i) for i, r in enumerate(results)
    )
    wrong = sum(
        r.ok and r.value is not None and r.value.total != expected(i) for i, r in enumerate(results)
    )
    errors: dict[str, int] = {}
    for r in results:
        if r.error is not None:
            errors[r.error.kind] = errors.get(r.error.kind, 0) + 1
    return {**row, "wall": wall, "cpu": cpu, "ok": ok, "wrong": wrong, "errors": errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--cap", type=int, default=16)
    a = ap.parse_args()
    os.environ["RAGJUDGE_HOME"] = tempfile.mkdtemp(prefix="bench_llm_")
    sys.path.insert(0, str(ROOT))
    n, lat, cap = a.calls, a.latency, a.cap
    ideal = n * lat / cap
    print(f"{n} calls, server latency {lat:g} s, cap {cap}: ideal {ideal:.2f} s")
    print(
        f"{'phase':<34} {'wall s':>8} {'x ideal':>8} {'CPU ms/call':>12} {'ok':>6} {'requests':>9}"
    )

    def line(name: str, wall: float, cpu: float, ok: int, requests: int) -> None:
        print(
            f"{name:<34} {wall:8.2f} {wall / ideal:8.3f} {1000 * cpu / n:12.2f} "
            f"{ok:6d} {requests:9d}"
        )

    with server(lat) as root:
        base = root + "/v1"
        wall, cpu, ok = asyncio.run(raw_sdk(base, n, cap))
        raw_wall, raw_cpu = wall, cpu
        line("raw openai SDK + semaphore", wall, cpu, ok, stats(root)["chat_requests"] - 1)
        reset(root)
        shared_cache = Path(tempfile.mkdtemp(prefix="bench_llm_rerun_")) / "cache.sqlite"
        r = asyncio.run(ragjudge_run(base, n, cap, cache_path=shared_cache))
        line(
            "ragjudge LLMClient.structured",
            r["wall"],
            r["cpu"],
            r["ok"],
            stats(root)["chat_requests"] - 1,
        )
        peak = stats(root)["max_in_flight"]
        reset(root)
        again = asyncio.run(ragjudge_run(base, n, cap, cache_path=shared_cache))
        line(
            "ragjudge re-run (cache)",
            again["wall"],
            again["cpu"],
            again["ok"],
            stats(root)["chat_requests"],
        )
    print(
        f"ragjudge / ideal = {r['wall'] / ideal:.3f} (target <= 1.15); ragjudge / raw SDK "
        f"wall = {r['wall'] / raw_wall:.3f}, CPU = {r['cpu'] / raw_cpu:.2f}x; server peak "
        f"in flight {peak}; re-run server requests {stats_requests(again)}"
    )

    print("\nfaults: 20% 429 (Retry-After 0.2 s), 5% malformed; max_attempts 10")
    print(
        f"{'limit':<10} {'wall s':>8} {'x ideal':>8} {'ok':>6} {'wrong':>6} {'errors':>22} "
        f"{'attempts':>9} {'repairs':>8} {'failed att.':>11}"
    )
    for adaptive in (True, False):
        with server(lat, "429=0.2,malformed=0.05") as root:
            f = asyncio.run(ragjudge_run(root + "/v1", n, cap, adaptive=adaptive, attempts=10))
        print(
            f"{'adaptive' if adaptive else 'fixed':<10} {f['wall']:8.2f} "
            f"{f['wall'] / ideal:8.3f} {f['ok']:6d} {f['wrong']:6d} "
            f"{json.dumps(f['errors']):>22} {f['attempts']:9d} {f['repairs']:8d} "
            f"{f['failed_attempts']:11d}"
        )


def stats_requests(row: dict[str, Any]) -> int:
    return int(row["attempts"])


if __name__ == "__main__":
    main()
