"""Cost of ``ragjudge.evaluate`` against the CLI (``ragjudge judge``) on the same rows.

Rows: the demo set's questions answered by ``ragjudge generate`` (BM25 top-3, extractive
generator), split into halves A and B. The offline judges keep their embeddings in a disk cache
under ``RAGJUDGE_HOME``; one untimed ``ragjudge judge`` on B fills it first, so every
measurement below does the same judging work from a warm cache and the figures isolate what
each way pays around it (process start, imports, model load). Measured with the offline
judges (wall seconds):

- ``cli(B)``: ``ragjudge judge --input B`` in a new process (process start, imports, model
  load, judging, writing nothing but the summary);
- ``api cold(B)``: a new process running ``import ragjudge; ragjudge.evaluate(B)``;
- ``api warm(B)``: in this process, the first ``evaluate(B)`` after ``evaluate(A)`` loaded the
  imports and the models (a notebook or test session judging a second batch);
- ``api again(B)``: ``evaluate(B)`` repeated (B's embeddings now cached as well).

Prints the figures and the ratios ``cli / api warm`` and ``cli / api cold``, and checks that
the CLI and the API give the same scores on B. CLI and cold figures are the best of
``--repeats`` runs.

    .venv/bin/python bench/bench_api.py [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RAGJUDGE = [sys.executable, "-m", "ragjudge"]


def run(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    print(f"  ({secs:.1f} s: {' '.join(cmd[1:4])} ...)", file=sys.stderr, flush=True)
    return secs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-api-"))
    env = {
        **os.environ,
        "RAGJUDGE_HOME": str(work / "home"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    for name in ("OPENAI_BASE_URL", "RAGJUDGE_BASE_URL"):
        env.pop(name, None)
    os.environ.update({k: env[k] for k in ("RAGJUDGE_HOME", "HF_HUB_OFFLINE")})
    rows = work / "rows.jsonl"
    gen = ["generate", "--dataset", str(ROOT / "datasets/demo"), "--retriever", "bm25"]
    run([*RAGJUDGE, *gen, "--k", "3", "--output", str(rows)], env)
    lines = rows.read_text(encoding="utf-8").splitlines()
    half = len(lines) // 2
    a, b = work / "a.jsonl", work / "b.jsonl"
    a.write_text("\n".join(lines[:half]) + "\n", encoding="utf-8")
    b.write_text("\n".join(lines[half:]) + "\n", encoding="utf-8")

    cli_out = work / "cli.jsonl"
    judge = ["judge", "--backend", "offline", "--no-progress"]
    run([*RAGJUDGE, *judge, "--input", str(b)], env)  # fills the embedding cache (untimed)
    cli = [run([*RAGJUDGE, *judge, "--input", str(b), "--output", str(cli_out)], env)]
    cli += [run([*RAGJUDGE, *judge, "--input", str(b)], env) for _ in range(args.repeats - 1)]
    code = f"import ragjudge; ragjudge.evaluate({str(b)!r}, backend='offline')"
    cold = [run([sys.executable, "-c", code], env) for _ in range(args.repeats)]

    import ragjudge

    ragjudge.evaluate(a, backend="offline")
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        result = ragjudge.evaluate(b, backend="offline")
        times.append(time.perf_counter() - t0)

    cli_rows = [json.loads(x) for x in cli_out.read_text(encoding="utf-8").splitlines()]
    for name, results in result.results.items():
        assert [r.score for r in results] == [row["judges"][name]["score"] for row in cli_rows]

    best = {
        "cli": min(cli),
        "api cold": min(cold),
        "api warm": times[0],
        "api again": min(times[1:] or times),
    }
    print(f"{len(lines) - half} rows x {len(result.results)} offline judges")
    for name, secs in best.items():
        print(f"  {name:9s} {secs:7.2f} s")
    print(f"  cli / api warm = {best['cli'] / best['api warm']:.1f}x")
    print(f"  cli / api cold = {best['cli'] / best['api cold']:.2f}x")
    print("  scores: CLI and API identical on every row and judge")


if __name__ == "__main__":
    main()
