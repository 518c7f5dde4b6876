"""CPU and wall time of a sweep with the five LLM judges, writing to SQLite and to PostgreSQL.

Each run is the command a user types (``python -m ragjudge sweep``, a subprocess with a fresh
home, so a cold LLM cache): the demo data set (``--cases`` sampled), BM25, the extractive
generator, the five LLM judges at ``--ks``, through the real client over HTTP to the local test
server (``FakeLLMServer`` in its own process, ``--latency`` s per request), at
``RAGJUDGE_MAX_CONCURRENCY=--concurrency``. The run store is a SQLite file in the home, or a
fresh database on a PostgreSQL 15 server this script starts from the Debian binaries (as the
tests do, tests/fixtures/postgres.py, ``fsync=off``). Printed per backend: the sweep's CPU
seconds (user + system, the whole process) and wall seconds, means over ``--rounds``, with
PostgreSQL's as a ratio of SQLite's measured in the same run.

``--trees`` compares checkouts in one run (each a folder holding a ``ragjudge`` package, for
example a ``git worktree`` of an older commit), alternated round by round so the machine's drift
falls on all of them alike; the first tree is the peer of the others.

    .venv/bin/python bench/bench_sweep_store.py                       # this checkout, 3 rounds
    .venv/bin/python bench/bench_sweep_store.py --trees /tmp/old . --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragjudge.resources import demo_dir  # noqa: E402

JUDGES = "[faithfulness, answer_relevancy, completeness, context_recall, context_precision]"


def sweep_yaml(cases: int, ks: list[int]) -> str:
    return (
        f"dataset: {{path: {demo_dir()}, split: test, sample: {cases}}}\n"
        "retriever: {kind: bm25}\ngenerator: {kind: extractive}\n"
        f"judges: {{names: {JUDGES}, backend: llm}}\nks: {ks}\n"
    )


def serve(latency: float) -> tuple[subprocess.Popen[bytes], str]:
    """The test server in its own process (it never competes for the sweep's GIL)."""
    with tempfile.NamedTemporaryFile(suffix=".url", delete=False) as fh:
        url_file = Path(fh.name)
    code = (
        "import sys, pathlib\n"
        "from ragjudge.testing.server import FakeLLMServer\n"
        f"srv = FakeLLMServer(latency={latency})\n"
        "srv.start()\n"
        f"pathlib.Path({str(url_file)!r}).write_text(srv.base_url)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, cwd=REPO)
    deadline = time.monotonic() + 60
    while not url_file.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    url = url_file.read_text()
    url_file.unlink()
    if not url:
        raise SystemExit("the test server did not start")
    return proc, url


def chat_requests(url: str) -> int:
    """Chat requests the test server has answered so far (its ``GET /stats``)."""
    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=30) as r:
        return int(json.loads(r.read())["chat_requests"])


def one_sweep(
    tree: Path, url: str, store: str | None, args: argparse.Namespace
) -> tuple[float, float]:
    """CPU and wall seconds of one sweep command run in ``tree``."""
    with tempfile.TemporaryDirectory() as d:
        cfg = Path(d) / "sweep.yaml"
        cfg.write_text(sweep_yaml(args.cases, args.ks))
        env = dict(
            os.environ,
            OPENAI_BASE_URL=url,
            OPENAI_API_KEY="sk-bench",
            RAGJUDGE_MODEL="bench",
            RAGJUDGE_HOME=f"{d}/home",
            RAGJUDGE_MAX_CONCURRENCY=str(args.concurrency),
            PYTHONPATH=str(tree),
        )
        env.pop("RAGJUDGE_STORE_URL", None)
        if store is not None:
            env["RAGJUDGE_STORE_URL"] = store
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "ragjudge", "sweep", "--config", str(cfg), "--out", d],
            env=env,
            cwd=tree,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"the sweep in {tree} failed: {done.stderr.strip()[-500:]}")
        return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cases", type=int, default=40)
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 3, 5])
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trees", type=Path, nargs="+", default=[REPO])
    ap.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = ap.parse_args(argv)
    trees = [t.resolve() for t in args.trees]

    from tests.fixtures.postgres import BIN, start_server

    pg = None if args.no_postgres or not (BIN / "initdb").exists() else start_server()
    server, url = serve(args.latency)
    try:
        backends = ["sqlite"] + (["postgres"] if pg is not None else [])
        print(
            f"{args.cases} demo cases, ks {args.ks}, five LLM judges, latency {args.latency} s, "
            f"concurrency {args.concurrency}; {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        got: dict[tuple[str, Path], list[tuple[float, float]]] = {}
        calls = 0
        for r in range(args.rounds):
            for backend in backends:
                for tree in trees:
                    store = pg.fresh_url() if backend == "postgres" and pg else None
                    before = chat_requests(url)
                    cpu, wall = one_sweep(tree, url, store, args)
                    calls = chat_requests(url) - before
                    got.setdefault((backend, tree), []).append((cpu, wall))
                    print(
                        f"round {r + 1} {backend:8s} {tree}: {cpu:6.2f} CPU s, {wall:6.2f} s wall,"
                        f" {calls} LLM calls",
                        flush=True,
                    )
        print(f"\nmeans over {args.rounds} rounds ({calls} LLM calls a sweep):")
        base = {b: got[(b, trees[0])] for b in backends}
        for backend in backends:
            for tree in trees:
                rows = got[(backend, tree)]
                cpu = sum(c for c, _ in rows) / len(rows)
                wall = sum(w for _, w in rows) / len(rows)
                peer_cpu = sum(c for c, _ in base[backend]) / len(rows)
                sqlite_wall = sum(w for _, w in got[("sqlite", tree)]) / len(rows)
                print(
                    f"  {backend:8s} {tree}: {cpu:6.2f} CPU s ({cpu / peer_cpu:.2f} of the first"
                    f" tree's), {wall:6.2f} s wall ({wall / sqlite_wall:.2f} of SQLite's)"
                )
        print(f"load average at the end {os.getloadavg()[0]:.1f}")
    finally:
        server.communicate(b"", timeout=30)
        if pg is not None:
            pg.stop()


if __name__ == "__main__":
    main()
