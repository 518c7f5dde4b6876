"""The run store: round trips, idempotent writes, tags, locking, and clear errors."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragjudge.errors import ConfigError
from ragjudge.llm import LedgerEntry
from ragjudge.schema import (
    Answer,
    Evidence,
    JudgeResult,
    JudgeStatus,
    Ranking,
    RunManifest,
    ScoredDoc,
    TokenUsage,
)
from ragjudge.store import (
    RetrievalMetric,
    RunLock,
    RunLockedError,
    RunStore,
    StoredJudgeResult,
    StoreLockedError,
    item_id,
    parse_item_id,
)


def manifest(run_id: str = "r1", started: str = "2026-01-01T00:00:00+00:00") -> RunManifest:
    return RunManifest(
        run_id=run_id,
        dataset_name="demo",
        dataset_hash="d" * 16,
        config_hash="c" * 16,
        config={"definition": {"ks": [1, 2]}},
        ragjudge_version="0.1.0",
        models={"generator": "extractive@1"},
        started_at=started,
    )


def result(case: str, k: int, score: float | None = 0.5) -> JudgeResult:
    return JudgeResult(
        judge="faithfulness",
        judge_version="1",
        backend="offline",
        item_id=item_id(case, k),
        score=score,
        status=JudgeStatus.ok if score is not None else JudgeStatus.no_claims,
        evidence=Evidence(explanation="because"),
        usage=TokenUsage(prompt_tokens=10, calls=1),
    )


def test_item_id_round_trip():
    assert item_id("q@1", 3) == "q@1@k3"
    assert parse_item_id("q@1@k3") == ("q@1", 3)
    with pytest.raises(ValueError):
        parse_item_id("q1")


def test_round_trip_and_idempotent_writes(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    store.create_run(manifest())
    a = Answer(
        case_id="q1",
        k=2,
        text="x",
        context_ids=["d1", "d2"],
        contexts=["a", "b"],
        generator="extractive",
    )
    store.put_answers("r1", [a])
    store.put_answers("r1", [a.model_copy(update={"text": "y"})])  # replaced, not duplicated
    assert [x.text for x in store.answers("r1")] == ["y"]

    rows = [StoredJudgeResult("q1", k, "faithfulness", result("q1", k)) for k in (1, 2)]
    store.put_judge_results("r1", rows)
    store.put_judge_results("r1", rows)
    got = store.judge_results("r1")
    assert len(got) == 2 and got[0].result == rows[0].result

    store.put_rankings("r1", [Ranking(query_id="q1", docs=[ScoredDoc(doc_id="d1", score=1.0)])])
    assert store.rankings("r1")["q1"].doc_ids == ["d1"]
    store.put_retrieval_metrics("r1", [RetrievalMetric("q1", 1, "ndcg", 1.0)] * 2)
    assert store.retrieval_metrics("r1") == [RetrievalMetric("q1", 1, "ndcg", 1.0)]
    entries = [LedgerEntry(kind="call", call_id=str(i), prompt_tokens=i) for i in (1, 2, 3)]
    store.append_ledger("r1", entries[:2])
    store.append_ledger("r1", entries[2:])
    assert store.ledger("r1") == entries
    assert store.counts("r1") == {
        "answers": 1,
        "judge_results": 2,
        "rankings": 1,
        "retrieval_metrics": 1,
        "ledger": 3,
    }
    # A second connection (another process would do the same) sees committed rows.
    other = RunStore(tmp_path / "runs.sqlite")
    assert other.manifest("r1").dataset_hash == "d" * 16
    mode = sqlite3.connect(tmp_path / "runs.sqlite").execute("PRAGMA journal_mode").fetchone()
    assert mode[0] == "wal"


def test_runs_tags_status_and_resolution(tmp_path):
    store = RunStore(tmp_path / "s.sqlite")
    store.create_run(manifest("20260101-aaaa", "2026-01-01T00:00:00+00:00"))
    store.create_run(manifest("20260102-bbbb", "2026-01-02T00:00:00+00:00"))
    with pytest.raises(ConfigError, match="already exists"):
        store.create_run(manifest("20260101-aaaa"))
    assert [m.run_id for m in store.list_runs()] == ["20260101-aaaa", "20260102-bbbb"]
    assert store.resolve("latest") == "20260102-bbbb"
    assert store.resolve("20260101") == "20260101-aaaa"
    with pytest.raises(ConfigError, match="ambiguous"):
        store.resolve("2026")
    with pytest.raises(ConfigError, match=r"no run 'nope'.*known runs"):
        store.resolve("nope")
    store.tag("20260101-aaaa", "baseline")
    store.tag("20260102-bbbb", "baseline", "v2")
    assert [m.run_id for m in store.find_by_tag("baseline")] == ["20260102-bbbb", "20260101-aaaa"]
    assert store.manifest("20260102-bbbb").tags == {"baseline": "v2"}
    m = store.set_status("20260101-aaaa", "finished", finished=True)
    assert m.status == "finished" and m.finished_at is not None
    assert store.manifest("20260101-aaaa").status == "finished"
    store.delete_run("20260101-aaaa")
    assert [m.run_id for m in store.list_runs()] == ["20260102-bbbb"]


def test_store_locked_by_another_process_is_a_clear_error(tmp_path):
    path = tmp_path / "runs.sqlite"
    store = RunStore(path, busy_timeout=0.2)
    store.create_run(manifest())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sqlite3, sys, time
            c = sqlite3.connect({str(path)!r}, isolation_level=None)
            c.execute("BEGIN EXCLUSIVE")
            print("locked", flush=True)
            time.sleep(30)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreLockedError, match=r"runs.sqlite is locked by another process"):
            store.put_answers("r1", [])
    finally:
        holder.kill()
        holder.wait()
    store.put_answers("r1", [])  # usable again once the other process is gone


def test_run_lock_is_exclusive_and_released_by_process_death(tmp_path):
    path = tmp_path / "runs.sqlite"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import time
            from pathlib import Path
            from ragjudge.store import RunLock
            lock = RunLock(Path({str(path)!r}), "r1")
            lock.acquire()
            print("held", flush=True)
            time.sleep(30)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError, match=f"pid {holder.pid}"):
            RunLock(path, "r1").acquire()
    finally:
        holder.kill()  # SIGKILL: the OS drops the flock
        holder.wait()
    with RunLock(path, "r1"):
        pass


def test_a_locked_state_file_is_reported_as_locked_not_corrupt(tmp_path: Path) -> None:
    from ragjudge.errors import sqlite_file_error

    path = tmp_path / "x.sqlite"
    locked = str(sqlite_file_error(path, sqlite3.OperationalError("database is locked")))
    corrupt = str(sqlite_file_error(path, sqlite3.DatabaseError("file is not a database")))
    assert "locked by another process" in locked and "corrupt" not in locked
    assert "corrupt or truncated" in corrupt and str(path) in locked
