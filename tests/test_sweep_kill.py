"""kill -9 in the middle of a sweep with LLM judges; the same command again (killed too); then
``ragjudge sweep --resume RUN_ID``.

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
def test_kill_9_twice_then_resume_finishes_without_duplicates_or_repaid_calls(tmp_path):
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

        # The run to kill, twice: once, then the same command again is killed too, and then
        # ``sweep --resume RUN_ID`` (no config: the run's stored one) finishes it.
        server.reset()
        home = tmp_path / "home"
        env = env_for(server, home)
        sessions: list[list[str]] = []
        for cut in (len(reference) // 3, 2 * len(reference) // 3):
            start = len(server.chat_requests())
            proc = subprocess.Popen(
                sweep_cmd(cfg, tmp_path / "out"),
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            deadline = time.time() + 120
            while len(server.chat_requests()) < cut:
                assert proc.poll() is None, f"sweep ended before the kill: {proc.stderr.read()}"
                assert time.time() < deadline, "sweep made too few requests"
                time.sleep(0.01)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            assert proc.returncode == -signal.SIGKILL
            sessions.append(bodies(server, start))
            partial = rows(home)
            assert partial["runs"] == 1  # the second session resumed the first's run
            assert partial["judge_results"] < expected["judge_results"]

        con = sqlite3.connect(home / "runs.sqlite")
        ((run_id, status),) = con.execute("SELECT run_id, status FROM runs").fetchall()
        con.close()
        assert status == "running"  # killed: nobody could mark it
        start = len(server.chat_requests())
        again = subprocess.run(
            [
                sys.executable,
                "-m",
                "ragjudge",
                "sweep",
                "--resume",
                run_id,
                "--out",
                str(tmp_path / "out"),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert again.returncode == 0, again.stderr
        assert f"resuming run {run_id}" in again.stderr
        sessions.append(bodies(server, start))

    final = rows(home)
    assert final == expected  # one run, and exactly the rows of the uninterrupted run
    con = sqlite3.connect(home / "runs.sqlite")
    (status,) = con.execute("SELECT status FROM runs").fetchone()
    assert status == "finished"
    # The same work as the reference, and nothing answered before a kill was asked again,
    # except requests still in flight when the process died (at most one per slot per kill).
    sent = [b for session in sessions for b in session]
    assert set(sent) == set(reference)
    repaid = len(sent) - len(set(sent))
    print(
        f"reference {len(reference)} requests; sessions sent {[len(x) for x in sessions]}; "
        f"sent again {repaid}; rows {final}"
    )
    assert repaid <= 2 * CONCURRENCY
    assert len(sent) <= len(reference) + 2 * CONCURRENCY
    choice = json.loads((tmp_path / "out" / "choice.json").read_text())
    ref_choice = json.loads((tmp_path / "ref_out" / "choice.json").read_text())
    assert choice["best_k"] == ref_choice["best_k"]
    assert choice["tests"] == ref_choice["tests"]
