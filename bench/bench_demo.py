"""Wall time and peak memory of ``ragjudge demo`` (target: under 20 s on an idle machine,
including model load), beside two same-run peers: the same pipeline as ten separate single-k
runs (k = 1..10) in one process (model loaded once), i.e. what the sweep's prefix and
de-duplication reuse saves; and the demo with the judges' sentence encoder in torch bfloat16
(``RAGJUDGE_JUDGE_PRECISION=bf16``, the default until 2026-12-06) instead of the shipped ONNX
model: the demo's retrieval and generator use the judges' encoder (``encoder: judges``), so this
peer runs them on torch too, as the demo did before 2026-12-06 07:15 UTC.

Each side runs in its own fresh process and state folder (cold caches); peak memory is the
child's maximum resident set size (``os.wait4``).

    .venv/bin/python bench/bench_demo.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PEER = """
import sys
from pathlib import Path
from ragjudge.store import open_store
from ragjudge.sweep.demo import demo_config
from ragjudge.sweep.run import run_sweep
base = demo_config()
store = open_store()
best = {}
for k in range(1, 11):
    cfg = base.model_copy(update={"ks": [k]})
    out = run_sweep(cfg, store=store, new=True)
    best[k] = out.summary.table("objective")["objective"][k].mean
print("peer objective per k:", {k: round(v, 3) for k, v in best.items()})
"""


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MiB, stdout) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed:\n{err[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out


def env_with_home(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    env.update(
        RAGJUDGE_HOME=tempfile.mkdtemp(prefix="bench_demo_"),
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "RAGJUDGE_BASE_URL"):
        env.pop(var, None)
    return env


def main() -> None:
    out_dir = Path(tempfile.mkdtemp(prefix="bench_demo_out_"))
    demo_cmd = [sys.executable, "-m", "ragjudge", "demo", "--out", str(out_dir)]
    load = os.getloadavg()[0]
    demo_wall, demo_cpu, demo_rss, demo_out = measure(demo_cmd, env_with_home())
    peer_wall, peer_cpu, peer_rss, peer_out = measure([sys.executable, "-c", PEER], env_with_home())
    bf16_cmd = [*demo_cmd[:-1], tempfile.mkdtemp(prefix="bench_demo_bf16_")]
    bf16_wall, bf16_cpu, bf16_rss, _ = measure(
        bf16_cmd, env_with_home(RAGJUDGE_JUDGE_PRECISION="bf16")
    )
    choice = json.loads((out_dir / "choice.json").read_text())
    print(f"load average (1 min) before / after: {load:.1f} / {os.getloadavg()[0]:.1f} (2 cores)")
    print("| run | wall s | CPU s | peak RSS MiB |")
    print("|---|---|---|---|")
    print(f"| ragjudge demo (sweep k=1..10) | {demo_wall:.1f} | {demo_cpu:.1f} | {demo_rss:.0f} |")
    print(
        f"| peer: ten single-k runs, one process | {peer_wall:.1f} | {peer_cpu:.1f} "
        f"| {peer_rss:.0f} |"
    )
    print(
        f"| peer: demo, bf16 judges' encoder | {bf16_wall:.1f} | {bf16_cpu:.1f} | {bf16_rss:.0f} |"
    )
    print(
        f"ratio demo / bf16 demo: wall {demo_wall / bf16_wall:.2f}, CPU {demo_cpu / bf16_cpu:.2f}, "
        f"memory {demo_rss / bf16_rss:.2f}"
    )
    print(
        f"ratio demo / peer: wall {demo_wall / peer_wall:.2f}, CPU {demo_cpu / peer_cpu:.2f}, "
        f"memory {demo_rss / peer_rss:.2f}"
    )
    print(f"target: demo under 20 s (idle machine) -> {'met' if demo_wall < 20 else 'NOT met'}")
    print(f"chosen k {choice['best_k']}, within noise {choice['within_noise']}")
    print(demo_out.strip().splitlines()[-1] if demo_out.strip() else "")
    print(peer_out.strip())


if __name__ == "__main__":
    main()
