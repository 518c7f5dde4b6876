"""ragjudge's five LLM judges against ragas 0.4.3 on the same cases and the same local server.

Both sides judge the same synthetic samples (``../shared/bench/ragas_baseline/synth_data.py``:
question, 3-sentence answer with one unsupported claim, k contexts of ~600 chars with 2
relevant, reference) through one ragjudge test server (``FakeLLMServer``, a separate process,
``--latency`` seconds per chat and embeddings request). The server counts every request and
its prompt tokens (its offline token estimate, the same for both sides), so calls and tokens
per sample are exact counts, not estimates of ours.

Peers, measured in the same run:
- ragas classic: ``evaluate()`` with ``LangchainLLMWrapper(ChatOpenAI)`` and
  ``LangchainEmbeddingsWrapper(OpenAIEmbeddings)``, ``RunConfig(max_workers=W)`` (ragas'
  default W = 16);
- ragas collections: the v0.4 ``ragas.metrics.collections`` metrics with
  ``llm_factory(AsyncOpenAI)`` and unbounded concurrency, ragas' fastest configuration in
  ``../shared/bench/ragas_baseline/results.md``.

ragas runs Faithfulness, AnswerRelevancy, ContextRecall and ContextPrecision (4 metrics);
ragjudge runs those four plus completeness (5 judges). Targets: <= 5 calls per sample at any
k, <= 60 % of ragas' prompt tokens, >= 4x ragas' best samples/s; on the client (issue 29):
<= 10 ms of client CPU per sample at every concurrency, samples/s that never fall as the
concurrency rises, >= 0.8 of the ideal W / (calls x latency) at W = 64, and at W = 256 >= 3x
ragas' best or the scripted server's own capacity.

The server's capacity is measured alone: the exact requests ragjudge sent (recorded once on an
in-process server) are replayed by ``--blasters`` processes of a raw-socket HTTP/1.1 load
generator (pre-encoded requests, no SDK, no JSON parsing: far cheaper per request than any
client), ``--capacity-concurrency`` connections in all, several times over; requests/s over
the calls per sample is the most samples/s any client could get from it. The server's own CPU
per sample is read from ``/proc`` for every row, and the load average is printed beside it.

    .venv/bin/python bench/bench_judges_vs_ragas.py            # N = 100, k = 5, L = 0.2 s
    .venv/bin/python bench/bench_judges_vs_ragas.py --n 20 --skip-ragas
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import multiprocessing as mp
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BASELINE = Path(
    os.environ.get("RAGJUDGE_RAGAS_BASELINE", REPO.parent / "shared" / "bench" / "ragas_baseline")
)
JUDGES = ("faithfulness", "answer_relevancy", "completeness", "context_recall", "context_precision")
os.environ["RAGAS_DO_NOT_TRACK"] = "true"  # ragas' telemetry blocks its event loop
os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")
logging.getLogger("ragas").setLevel(logging.ERROR)  # "1 generations instead of 3" (its n race)


def make_samples(n: int, k: int) -> list[dict[str, Any]]:
    sys.path.insert(0, str(BASELINE))
    try:
        from synth_data import make_samples as synth
    finally:
        sys.path.remove(str(BASELINE))
    return list(synth(n, k=k))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http(url: str, payload: dict[str, Any] | None = None) -> Any:
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(
        url,
        data=data,
        method="GET" if payload is None else "POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


class Server:
    """The ragjudge test server in its own process (so it never competes for our GIL)."""

    def __init__(self, latency: float) -> None:
        self.port = free_port()
        code = (
            "from ragjudge.testing.server import FakeLLMServer;"
            f"FakeLLMServer(port={self.port}, latency={latency}).serve_forever()"
        )
        self.proc = subprocess.Popen([sys.executable, "-c", code])
        self.root = f"http://127.0.0.1:{self.port}"
        self.base_url = self.root + "/v1"
        for _ in range(200):
            try:
                http(self.root + "/health")
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("the test server exited") from None
                time.sleep(0.1)
        raise RuntimeError("the test server did not come up")

    def reset(self) -> None:
        http(self.root + "/reset", {})

    def stats(self) -> dict[str, Any]:
        return dict(http(self.root + "/stats"))

    def cpu(self) -> float:
        """CPU seconds the server process has used (user + system, from /proc)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.proc.terminate()  # the process we started, by its own handle
        self.proc.wait(timeout=10)


# ----------------------------------------------------------------------------- server alone


def record_requests(samples: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """The chat requests ragjudge sends for ``samples`` (template header, JSON body), recorded
    on an in-process server with no latency."""
    from ragjudge.testing.server import FakeLLMServer

    with FakeLLMServer() as srv:
        run_ragjudge(samples, srv.base_url, 64)
        return [(r["template"] or "", json.dumps(r["body"]).encode()) for r in srv.chat_requests()]


def _blast(port: int, payloads: list[bytes], conns: int, go: Any, out: Any) -> None:
    """One load-generator process: ``conns`` keep-alive connections sending ``payloads``
    (pre-encoded HTTP/1.1 requests) one after another, starting when ``go`` is set; puts
    (responses, responses that were not 200) on ``out``."""

    async def main() -> tuple[int, int]:
        todo = iter(payloads)
        done = bad = 0
        streams = [await asyncio.open_connection("127.0.0.1", port) for _ in range(conns)]
        await asyncio.to_thread(go.wait)

        async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal done, bad
            for req in todo:
                writer.write(req)
                head = await reader.readuntil(b"\r\n\r\n")
                size = re.search(rb"(?i)content-length: *(\d+)", head)
                await reader.readexactly(int(size[1]) if size else 0)
                done += 1
                bad += head[9:12] != b"200"
            writer.close()

        await asyncio.gather(*(one(r, w) for r, w in streams))
        return done, bad

    out.put(asyncio.run(main()))


def server_capacity(
    server: Server, requests: list[tuple[str, bytes]], conns: int, procs: int, rounds: int
) -> dict[str, Any]:
    """Requests/s of the server alone: ``requests`` replayed ``rounds`` times by ``procs``
    load-generator processes holding ``conns`` connections in all."""
    from ragjudge.llm.types import TEMPLATE_HEADER

    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Content-Type: application/json\r\nAuthorization: Bearer sk-bench\r\n"
        f"{TEMPLATE_HEADER}: {{template}}\r\nContent-Length: {{size}}\r\n\r\n"
    )
    payloads = [
        head.format(port=server.port, template=t, size=len(b)).encode() + b
        for _ in range(rounds)
        for t, b in requests
    ]
    ctx = mp.get_context("spawn")
    go, out = ctx.Event(), ctx.Queue()
    kids = [
        ctx.Process(
            target=_blast,
            args=(server.port, payloads[i::procs], conns // procs, go, out),
        )
        for i in range(procs)
    ]
    server.reset()
    for kid in kids:
        kid.start()
    time.sleep(2.0)  # the processes start and connect
    cpu0, t0 = server.cpu(), time.perf_counter()
    go.set()
    got = [out.get(timeout=600) for _ in kids]
    wall, cpu = time.perf_counter() - t0, server.cpu() - cpu0
    for kid in kids:
        kid.join(timeout=30)
    done, bad = sum(g[0] for g in got), sum(g[1] for g in got)
    return {"requests": done, "failed": bad, "wall": wall, "rps": done / wall, "cpu": cpu}


# ----------------------------------------------------------------------------- ragjudge


def run_ragjudge(samples: list[dict[str, Any]], base_url: str, concurrency: int) -> dict[str, Any]:
    from ragjudge.judges.registry import create_judge
    from ragjudge.judges.runner import run_judges
    from ragjudge.llm import judge_clients
    from ragjudge.schema import JudgeInput
    from ragjudge.stats import aggregate

    items = [
        JudgeInput(
            id=f"s{i}",
            question=s["user_input"],
            answer=s["response"],
            contexts=s["retrieved_contexts"],
            reference=s["reference"],
        )
        for i, s in enumerate(samples)
    ]
    with tempfile.TemporaryDirectory() as home:  # a cold cache: every call is paid
        os.environ["RAGJUDGE_HOME"] = home
        clients = judge_clients(
            len(JUDGES),
            base_url=base_url,
            api_key="sk-bench",
            model="bench",
            max_concurrency=concurrency,
        )
        judges = [create_judge(n, "llm", client=c) for n, c in zip(JUDGES, clients, strict=True)]
        t0, cpu0 = time.perf_counter(), time.process_time()
        results = asyncio.run(run_judges(judges, items, concurrency=concurrency, progress=False))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    scores = {n: aggregate(rs).mean for n, rs in results.items()}
    bad = sum(r.status.value != "ok" for rs in results.values() for r in rs)
    return {"wall": wall, "cpu": cpu, "scores": scores, "failed": bad}


# ----------------------------------------------------------------------------- ragas


def _ragas_classic(samples: list[dict[str, Any]], base_url: str, workers: int) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from openai import DefaultAsyncHttpxClient
    from ragas import EvaluationDataset, evaluate
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import AnswerRelevancy, ContextPrecision, ContextRecall, Faithfulness
    from ragas.run_config import RunConfig

    chat = ChatOpenAI(
        model="bench",
        base_url=base_url,
        api_key="sk-bench",
        http_async_client=DefaultAsyncHttpxClient(),
    )
    emb = OpenAIEmbeddings(
        model="bench-embed",
        base_url=base_url,
        api_key="sk-bench",
        check_embedding_ctx_length=False,
    )
    metrics = [Faithfulness(), AnswerRelevancy(), ContextRecall(), ContextPrecision()]
    t0, cpu0 = time.perf_counter(), time.process_time()
    res = evaluate(
        EvaluationDataset.from_list(samples),
        metrics=metrics,
        llm=LangchainLLMWrapper(chat),
        embeddings=LangchainEmbeddingsWrapper(emb),
        run_config=RunConfig(max_workers=workers),
        show_progress=False,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    df = res.to_pandas()
    names = ["faithfulness", "answer_relevancy", "context_recall", "context_precision"]
    scores = {n: float(df[n].mean()) for n in names}
    nan = int(sum(df[n].isna().sum() for n in names))
    return {"wall": wall, "cpu": cpu, "scores": scores, "failed": nan}


def _ragas_collections(samples: list[dict[str, Any]], base_url: str) -> dict[str, Any]:
    from openai import AsyncOpenAI
    from ragas.embeddings import embedding_factory
    from ragas.llms import llm_factory
    from ragas.metrics.collections import (
        AnswerRelevancy,
        ContextPrecision,
        ContextRecall,
        Faithfulness,
    )

    async def main() -> tuple[dict[str, list[float]], float, float]:
        client = AsyncOpenAI(base_url=base_url, api_key="sk-bench")
        llm = llm_factory("bench", client=client)
        emb = embedding_factory("openai", model="bench-embed", client=client)
        jobs: list[tuple[str, Any, dict[str, Any]]] = []
        m = {
            "faithfulness": Faithfulness(llm=llm),
            "answer_relevancy": AnswerRelevancy(llm=llm, embeddings=emb),
            "context_recall": ContextRecall(llm=llm),
            "context_precision": ContextPrecision(llm=llm),
        }
        for s in samples:
            q, a, c, r = s["user_input"], s["response"], s["retrieved_contexts"], s["reference"]
            jobs += [
                (
                    "faithfulness",
                    m["faithfulness"],
                    {"user_input": q, "response": a, "retrieved_contexts": c},
                ),
                ("answer_relevancy", m["answer_relevancy"], {"user_input": q, "response": a}),
                (
                    "context_recall",
                    m["context_recall"],
                    {"user_input": q, "retrieved_contexts": c, "reference": r},
                ),
                (
                    "context_precision",
                    m["context_precision"],
                    {"user_input": q, "retrieved_contexts": c, "reference": r},
                ),
            ]

        async def one(metric: Any, kwargs: dict[str, Any]) -> float:
            try:
                return float((await metric.ascore(**kwargs)).value)
            except Exception:
                return float("nan")

        t0, cpu0 = time.perf_counter(), time.process_time()
        vals = await asyncio.gather(*(one(mt, kw) for _, mt, kw in jobs))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        await client.close()  # else the SDK closes it at GC, on a later run's event loop
        out: dict[str, list[float]] = {}
        for (name, _, _), v in zip(jobs, vals, strict=True):
            out.setdefault(name, []).append(v)
        return out, wall, cpu

    per, wall, cpu = asyncio.run(main())
    scores = {
        n: sum(v for v in vs if v == v) / max(1, sum(v == v for v in vs)) for n, vs in per.items()
    }
    nan = sum(v != v for vs in per.values() for v in vs)
    return {"wall": wall, "cpu": cpu, "scores": scores, "failed": nan}


# ----------------------------------------------------------------------------- driver


def measure(name: str, fn: Any, server: Server, n: int) -> dict[str, Any]:
    server.reset()
    cpu0 = server.cpu()
    rec = fn()
    server_cpu = server.cpu() - cpu0
    st = server.stats()
    rec.update(
        name=name,
        n=n,
        samples_per_s=n / rec["wall"],
        calls=st["chat_requests"] / n,
        embeddings=st["embedding_requests"] / n,
        prompt_tokens=st["prompt_tokens"] / n,
        completion_tokens=st["completion_tokens"] / n,
        peak_in_flight=st["max_in_flight"],
        cpu_ms=1000 * rec["cpu"] / n,
        server_cpu_ms=1000 * server_cpu / n,
        load=os.getloadavg()[0],
    )
    print(
        f"{name:<34} {rec['wall']:7.2f}s {rec['samples_per_s']:7.2f}/s  calls {rec['calls']:5.2f}"
        f"  emb {rec['embeddings']:4.2f}  prompt tok {rec['prompt_tokens']:7.0f}"
        f"  compl {rec['completion_tokens']:5.0f}  cpu {rec['cpu_ms']:5.1f} ms  "
        f"server cpu {rec['server_cpu_ms']:5.1f} ms  peak {rec['peak_in_flight']:3d}  "
        f"failed {rec['failed']}  load {rec['load']:.1f}",
        flush=True,
    )
    return rec


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--ragas-workers", type=int, nargs="+", default=[16])
    ap.add_argument("--quick", action="store_true", help="skip the ragas collections peer")
    ap.add_argument("--skip-ragas", action="store_true", help="no ragas rows (quick iterations)")
    ap.add_argument("--capacity-concurrency", type=int, default=256)
    ap.add_argument("--blasters", type=int, default=2, help="load-generator processes")
    ap.add_argument(
        "--capacity-rounds", type=int, default=3, help="replays of the requests (0: skip)"
    )
    ap.add_argument("--json", type=Path, default=None, help="write the records here")
    args = ap.parse_args(argv)

    samples = make_samples(args.n, args.k)
    recorded = record_requests(samples) if args.capacity_rounds else []
    server = Server(args.latency)
    records: list[dict[str, Any]] = []
    try:
        # warm-up (imports, model loading, connection pools), not measured
        warm = make_samples(2, args.k)
        run_ragjudge(warm, server.base_url, 4)
        if not args.skip_ragas:
            _ragas_classic(warm, server.base_url, 4)
        print(
            f"N={args.n} k={args.k} latency={args.latency}s (chat and embeddings); "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
        )
        cap: dict[str, Any] = {"samples_per_s": float("nan")}
        if recorded:
            cap = server_capacity(
                server, recorded, args.capacity_concurrency, args.blasters, args.capacity_rounds
            )
            per_sample = len(recorded) / args.n
            cap["samples_per_s"] = cap["rps"] / per_sample
            print(
                f"server alone ({args.blasters} load generators, {args.capacity_concurrency} "
                f"connections, {cap['requests']} requests, {cap['failed']} failed): "
                f"{cap['rps']:.0f} requests/s = {cap['samples_per_s']:.1f} samples/s at "
                f"{per_sample:.2f} calls/sample; server cpu "
                f"{1000 * cap['cpu'] / cap['requests']:.2f} ms/request; "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        for c in args.concurrency:
            records.append(
                measure(
                    f"ragjudge 5 judges, concurrency {c}",
                    lambda c=c: run_ragjudge(samples, server.base_url, c),
                    server,
                    args.n,
                )
            )
        if not args.skip_ragas:
            for w in args.ragas_workers:
                records.append(
                    measure(
                        f"ragas classic evaluate(), W={w}",
                        lambda w=w: _ragas_classic(samples, server.base_url, w),
                        server,
                        args.n,
                    )
                )
        if not args.quick and not args.skip_ragas:
            records.append(
                measure(
                    "ragas collections, unbounded",
                    lambda: _ragas_collections(samples, server.base_url),
                    server,
                    args.n,
                )
            )
        k10 = make_samples(min(args.n, 20), 10)
        records.append(
            measure(
                "ragjudge 5 judges at k=10 (calls)",
                lambda: run_ragjudge(k10, server.base_url, 64),
                server,
                len(k10),
            )
        )
    finally:
        server.close()

    ours = [r for r in records if r["name"].startswith("ragjudge") and "k=10" not in r["name"]]
    theirs = [r for r in records if r["name"].startswith("ragas")]
    best_ours = max(ours, key=lambda r: r["samples_per_s"])
    print()
    print("client (issue 29): concurrency, samples/s, ratio to ideal W/(calls x latency), cpu")
    for c, r in zip(args.concurrency, ours, strict=True):
        ideal = c / (r["calls"] * args.latency)
        r["ideal_ratio"] = r["samples_per_s"] / ideal
        print(
            f"  {c:4d}: {r['samples_per_s']:7.2f}/s  {r['ideal_ratio']:.2f} of {ideal:.0f}/s"
            f"  cpu {r['cpu_ms']:5.1f} ms/sample  (load {r['load']:.1f})"
        )
    rates = [r["samples_per_s"] for r in ours]
    print(
        f"  worst client cpu {max(r['cpu_ms'] for r in ours):.1f} ms/sample (goal <= 10); "
        "throughput "
        + ("never falls" if all(b >= a for a, b in itertools.pairwise(rates)) else "FALLS")
        + " as concurrency rises"
    )
    top = ours[-1]
    best_ragas: dict[str, Any] = {}
    line = (
        f"  at concurrency {args.concurrency[-1]}: {top['samples_per_s']:.2f}/s = "
        f"{top['samples_per_s'] / cap['samples_per_s']:.2f} of the server's capacity "
        f"({cap['samples_per_s']:.1f}/s)"
    )
    if theirs:
        best_ragas = max(theirs, key=lambda r: r["samples_per_s"])
        line += (
            f", {top['samples_per_s'] / best_ragas['samples_per_s']:.1f}x ragas' best "
            f"({best_ragas['samples_per_s']:.2f}/s)"
        )
    print(line)
    at_cap = top["samples_per_s"] >= 0.9 * cap["samples_per_s"]
    beats = bool(theirs) and top["samples_per_s"] >= 3 * best_ragas["samples_per_s"]
    print(
        "  bound hit at the top concurrency: "
        + ("the server's capacity (>= 0.9 of it)" if at_cap else "not the server's (the client)")
        + ("; >= 3x ragas' best: met" if beats else "; >= 3x ragas' best: not met or not run")
    )
    if theirs:
        classic = theirs[0]
        print(
            f"calls/sample: ragjudge {best_ours['calls']:.2f} (k=10: {records[-1]['calls']:.2f})"
            f" vs ragas classic {classic['calls']:.2f}"
        )
        print(
            f"prompt tokens/sample: ragjudge {best_ours['prompt_tokens']:.0f} = "
            f"{best_ours['prompt_tokens'] / classic['prompt_tokens']:.0%} of ragas classic "
            f"({classic['prompt_tokens']:.0f})"
        )
        print(
            f"samples/s: ragjudge best {best_ours['samples_per_s']:.2f} = "
            f"{best_ours['samples_per_s'] / best_ragas['samples_per_s']:.1f}x ragas best "
            f"({best_ragas['name']}: {best_ragas['samples_per_s']:.2f}), "
            f"{best_ours['samples_per_s'] / classic['samples_per_s']:.1f}x ragas classic"
        )
    for r in records:
        print(
            f"  scores {r['name']}: "
            + ", ".join(f"{k} {v:.3f}" for k, v in r["scores"].items() if v is not None)
        )
    if args.json:
        args.json.write_text(json.dumps({"server_alone": cap, "records": records}, indent=1))


if __name__ == "__main__":
    main()
