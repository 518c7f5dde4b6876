"""The ``sweep`` command turns bad input into one clear message and exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragjudge", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def offline_config(folder: Path, *, limit: int, judge: str, ks: str) -> Path:
    """``folder/sweep.yaml``: the bundled demo's first ``limit`` cases, BM25, one offline
    ``judge``, ``ks`` (a YAML list)."""
    from ragjudge.resources import demo_dir

    cfg = folder / "sweep.yaml"
    cfg.write_text(
        f"dataset: {{path: {demo_dir()}, split: test, limit: {limit}}}\n"
        f"retriever: {{kind: bm25}}\njudges: {{names: [{judge}], backend: offline}}\nks: {ks}\n"
    )
    return cfg


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


def test_sweep_whose_judge_calls_all_fail_says_why_and_exits_2(tmp_path, monkeypatch):
    """An unreachable endpoint: the run is stored as failed, the judge's first error is printed,
    and the exit code is 2 rather than a silent 'no k could be chosen' with exit 0."""
    from ragjudge.resources import demo_dir
    from ragjudge.store import open_store

    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(
        f"dataset: {{path: {demo_dir()}, split: test, limit: 3}}\nretriever: {{kind: bm25}}\n"
        "judges: {names: [faithfulness], backend: llm}\nks: [1, 2]\n"
    )
    for name, value in {
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": "sk-not-sent-anywhere",
        "RAGJUDGE_MODEL": "m",
        "RAGJUDGE_MAX_ATTEMPTS": "1",
    }.items():
        monkeypatch.setenv(name, value)
    res = run("sweep", "--config", str(cfg), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    text = " ".join(res.stderr.split())
    assert "pre-flight call to model 'm' at http://127.0.0.1:9/v1 failed" in text
    assert "cannot reach the LLM endpoint" in text and "Traceback" not in text
    runs = open_store().list_runs()
    assert len(runs) == 1 and runs[0].status == "failed"


def test_a_sweep_without_out_writes_nothing_into_the_working_directory(tmp_path):
    """Issue #30, 17: without ``--out`` the tables, plots and summary go to the documented
    default (``<state folder>/sweeps/RUN_ID/``), which the command prints, and the working
    directory is left as it was (a ``sweep-RUN_ID/`` folder used to appear in it)."""
    import os
    from pathlib import Path

    from ragjudge.store import open_store

    work = tmp_path / "work"
    work.mkdir()
    cfg = offline_config(tmp_path, limit=3, judge="context_recall", ks="[1, 2]")
    res = run("sweep", "--config", str(cfg), cwd=work)
    assert res.returncode == 0, res.stderr
    assert sorted(os.listdir(work)) == []
    run_id = open_store().list_runs()[0].run_id
    folder = Path(os.environ["RAGJUDGE_HOME"]) / "sweeps" / run_id
    assert (folder / "summary.html").is_file()
    assert f"report in {folder}/\n" in res.stderr  # on one line, to be copied
    out = tmp_path / "chosen"
    res = run("sweep", "--config", str(cfg), "--new", "--out", str(out), cwd=work)
    assert res.returncode == 0, res.stderr
    assert (out / "summary.html").is_file() and sorted(os.listdir(work)) == []


def test_resume_and_new_together_are_refused(tmp_path):
    """``--resume RUN --new`` resumed the run and ignored ``--new`` without a word."""
    from ragjudge.store import open_store

    cfg = offline_config(tmp_path, limit=2, judge="context_precision", ks="[1]")
    first = run("sweep", "--config", str(cfg), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    res = run("sweep", "--config", str(cfg), "--resume", "latest", "--new", cwd=tmp_path)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert "--resume and --new contradict each other" in lines[0]
    assert len(open_store().list_runs()) == 1
