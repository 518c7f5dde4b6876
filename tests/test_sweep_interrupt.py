"""Ctrl-C in the middle of a sweep (issue 30 §2): the run is stored ``interrupted`` (not
``failed``), the command exits 130 and a line says how to resume; running the same command
again resumes it.

Real parts: the ``ragjudge sweep`` command in a subprocess, BM25 retrieval, a user's generator
(by import path) that blocks until the signal arrives, a real SIGINT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ragjudge.store import open_store
from tests.test_sweep_kill import write_dataset

PARTS = """
import asyncio
import os
from pathlib import Path

import ragjudge


async def generate(question, contexts):
    Path("generating").touch()
    if os.environ.get("SLOW_PARTS") == "1":
        await asyncio.sleep(120)
    return contexts[0]


@ragjudge.judge(name="brief", needs=("answer",))
def brief(answer):
    return float(len(answer) < 80)
"""


def test_ctrl_c_stores_the_run_as_interrupted_and_says_how_to_resume(tmp_path: Path) -> None:
    write_dataset(tmp_path / "data")
    (tmp_path / "slowparts.py").write_text(PARTS)
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(
        "dataset: {path: data}\nretriever: {kind: bm25}\n"
        "generator: {kind: 'slowparts:generate'}\njudges: {names: ['slowparts:brief']}\n"
        "ks: [1, 2]\n"
    )
    home = tmp_path / "home"
    env = dict(os.environ, RAGJUDGE_HOME=str(home), SLOW_PARTS="1")
    cmd = [sys.executable, "-m", "ragjudge", "sweep", "--config", str(cfg)]
    cmd += ["--out", str(tmp_path / "out")]
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "generating").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the sweep never reached generation"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    with open_store(home / "runs.sqlite") as store:
        (run,) = store.list_runs()
        assert run.status == "interrupted"
    said = " ".join(err.split())  # the console wraps long lines
    assert f"run {run.run_id} is stored as interrupted" in said, err
    assert "run the same command again to resume it" in said
    # the same command again resumes it and finishes
    env["SLOW_PARTS"] = "0"
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert f"resuming run {run.run_id}" in done.stderr
    with open_store(home / "runs.sqlite") as store:
        assert store.manifest(run.run_id).status == "finished"
