"""kill -9 in the middle of a sweep with LLM judges, then the same command again.

Real parts throughout: the ``ragjudge sweep`` command in a subprocess, BM25 retrieval, the chat
generator and the five LLM judges talking over HTTP to the local test server. The resumed run
must finish with exactly the rows of an uninterrupted run (no duplicates) and must not send
again any request whose answer the killed process had already received.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragjudge.testing.server import FakeLLMServer

METALS = ["copper", "iron", "zinc", "tin", "lead", "gold", "silver", "nickel"]
KS = [1, 2, 3, 4, 5]
CONCURRENCY = 4


def write_dataset(folder: Path) -> None:
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w") as fh:
        for m in METALS:
            fh.write(json.dumps({"_id": f"{m}-a", "text": f"{m.title()} is mined in Chile."}))
            fh.write("\n")
            fh.write(json.dumps({"_id": f"{m}-b", "text": f"{m.title()} conducts heat well."}))
            fh.write("\n")
    with (folder / "queries.jsonl").open("w") as fh:
        for m in METALS:
            row = {
                "_id": f"q-{m}",
                "text": f"Where is {m} mined?",
                "reference": f"{m.title()} is mined in Chile.",
            }
            fh.write(json.dumps(row) + "\n")
    with (folder / "qrels" / "test.tsv").open("w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for m in METALS:
            fh.write(f"q-{m}\t{m}-a\t2\n")


def write_config(folder: Path) -> Path:
    cfg = folder / "sweep.yaml"
    cfg.write_text(
        "dataset: {path: data}\n"
        "retriever: {kind: bm25}\n"
        "generator: {kind: chat}\n"
        "judges: {backend: llm}\n"
        f"ks: {KS}\n"
        f"concurrency: {CONCURRENCY}\n"
    )
    return cfg


def env_for(server: FakeLLMServer, home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        RAGJUDGE_HOME=str(home),
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="sk-test-secret",
        RAGJUDGE_MODEL="fake-model",
        RAGJUDGE_MAX_CONCURRENCY=str(CONCURRENCY),
        HF_HUB_OFFLINE="1",
    )
    return env


def sweep_cmd(cfg: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "ragjudge", "sweep", "--config", str(cfg), "--out", str(out)]


def bodies(server: FakeLLMServer, start: int = 0) -> list[str]:
    return [
        json.dumps(r["body"]["messages"], sort_keys=True)
        for r in server.chat_requests()[start:]
        if r.get("status") == 200
    ]


def rows(home: Path) -> dict[str, int]:
    con = sqlite3.connect(home / "runs.sqlite")
    out = {
        t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
        for t in ("runs", "answers", "judge_results", "rankings", "retrieval_metrics")
    }
    con.close()
    return out


@pytest.mark.slow
def test_kill_9_then_same_command_finishes_without_duplicates_or_repaid_calls(tmp_path):
    write_dataset(tmp_path / "data")
    cfg = write_config(tmp_path)
    with FakeLLMServer(latency=0.03) as server:
        # The uninterrupted reference run, in its own state folder.
        ref_home = tmp_path / "ref_home"
        done = subprocess.run(
            sweep_cmd(cfg, tmp_path / "ref_out"),
            env=env_for(server, ref_home),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        reference = bodies(server)
        assert len(reference) > 60
        expected = rows(ref_home)
        assert expected["answers"] == len(METALS) * len(KS)
        assert expected["judge_results"] == 5 * len(METALS) * len(KS)

        # The run to kill.
        server.reset()
        home = tmp_path / "home"
        proc = subprocess.Popen(
            sweep_cmd(cfg, tmp_path / "out"),
            env=env_for(server, home),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.time() + 120
        while len(server.chat_requests()) < len(reference) // 2:
            assert proc.poll() is None, f"sweep ended before the kill: {proc.stderr.read()}"
            assert time.time() < deadline, "sweep made too few requests"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        first = bodies(server)
        partial = rows(home)
        assert partial["runs"] == 1
        assert partial["judge_results"] < expected["judge_results"]

        # The same command again resumes the killed run and finishes it.
        n_before = len(server.chat_requests())
        again = subprocess.run(
            sweep_cmd(cfg, tmp_path / "out"),
            env=env_for(server, home),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert again.returncode == 0, again.stderr
        assert "resuming run" in again.stderr
        second = bodies(server, n_before)

    final = rows(home)
    assert final == expected  # one run, and exactly the rows of the uninterrupted run
    con = sqlite3.connect(home / "runs.sqlite")
    (status,) = con.execute("SELECT status FROM runs").fetchone()
    assert status == "finished"
    # The same work as the reference, and nothing answered before the kill was asked again,
    # except requests still in flight when the process died (at most one per slot).
    assert set(first) | set(second) == set(reference)
    repaid = len(set(first) & set(second))
    print(
        f"reference {len(reference)} requests; killed after {len(first)}; resumed sent "
        f"{len(second)}; sent again {repaid}; rows {final}"
    )
    assert repaid <= CONCURRENCY
    assert len(first) + len(second) <= len(reference) + CONCURRENCY
    assert len(second) < len(reference) - len(first) + CONCURRENCY + 1
    choice = json.loads((tmp_path / "out" / "choice.json").read_text())
    ref_choice = json.loads((tmp_path / "ref_out" / "choice.json").read_text())
    assert choice["best_k"] == ref_choice["best_k"]
    assert choice["tests"] == ref_choice["tests"]
