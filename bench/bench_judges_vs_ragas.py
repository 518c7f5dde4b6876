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
k, <= 60 % of ragas' prompt tokens, >= 4x ragas' best samples/s.

    .venv/bin/python bench/bench_judges_vs_ragas.py            # N = 100, k = 5, L = 0.2 s
    .venv/bin/python bench/bench_judges_vs_ragas.py --n 20 --quick
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
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

    def close(self) -> None:
        self.proc.terminate()  # the process we started, by its own handle
        self.proc.wait(timeout=10)


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
    rec = fn()
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
    )
    print(
        f"{name:<34} {rec['wall']:7.2f}s {rec['samples_per_s']:7.2f}/s  calls {rec['calls']:5.2f}"
        f"  emb {rec['embeddings']:4.2f}  prompt tok {rec['prompt_tokens']:7.0f}"
        f"  compl {rec['completion_tokens']:5.0f}  cpu {rec['cpu_ms']:5.1f} ms  "
        f"peak {rec['peak_in_flight']:3d}  failed {rec['failed']}",
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
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--ragas-workers", type=int, nargs="+", default=[16])
    ap.add_argument("--quick", action="store_true", help="skip the ragas collections peer")
    ap.add_argument("--json", type=Path, default=None, help="write the records here")
    args = ap.parse_args(argv)

    samples = make_samples(args.n, args.k)
    server = Server(args.latency)
    records: list[dict[str, Any]] = []
    try:
        # warm-up (imports, model loading, connection pools), not measured
        warm = make_samples(2, args.k)
        run_ragjudge(warm, server.base_url, 4)
        _ragas_classic(warm, server.base_url, 4)
        print(f"N={args.n} k={args.k} latency={args.latency}s (chat and embeddings)")
        for c in args.concurrency:
            records.append(
                measure(
                    f"ragjudge 5 judges, concurrency {c}",
                    lambda c=c: run_ragjudge(samples, server.base_url, c),
                    server,
                    args.n,
                )
            )
        for w in args.ragas_workers:
            records.append(
                measure(
                    f"ragas classic evaluate(), W={w}",
                    lambda w=w: _ragas_classic(samples, server.base_url, w),
                    server,
                    args.n,
                )
            )
        if not args.quick:
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
    best_ragas = max(theirs, key=lambda r: r["samples_per_s"])
    classic = theirs[0]
    print()
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
        args.json.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
