"""The ``sweep`` command turns bad input into one clear message and exit code 2."""

from __future__ import annotations

import subprocess
import sys


def run(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragjudge", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_unknown_keys_and_bad_k_exit_2_without_traceback(tmp_path):
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text("dataset: {path: .}\nks: [0, 2, 2]\njudgs: [faithfulness]\n")
    res = run("sweep", "--config", str(cfg), cwd=tmp_path)
    assert res.returncode == 2
    assert "unknown key 'judgs'" in res.stderr
    assert "k must be a positive integer; got 0" in res.stderr
    assert "Traceback" not in res.stderr


def test_unknown_run_is_a_clear_error(tmp_path):
    res = run("runs", "show", "nope", cwd=tmp_path)
    assert res.returncode == 2 and "no run 'nope'" in res.stderr and "Traceback" not in res.stderr
