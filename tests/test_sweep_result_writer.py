"""The sweep's judge-result writer: paid results are stored the moment they return, free ones
in batches, and nothing is left waiting after ``flush``; writes run in a worker thread, so the
event loop turns while another process holds the store's write lock, and results returning
meanwhile share one transaction."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from ragjudge.schema import JudgeResult, JudgeStatus, TokenUsage
from ragjudge.store import StoredJudgeResult, open_store
from ragjudge.store.sql import SqlRunStore
from ragjudge.sweep.execute import FREE_ROWS, ResultWriter
from tests.test_store import manifest


def _result(case: str, usage: TokenUsage | None = None) -> JudgeResult:
    return JudgeResult(
        judge="faithfulness",
        judge_version="v",
        backend="llm" if usage else "offline",
        item_id=case,
        score=0.5,
        status=JudgeStatus.ok,
        usage=usage or TokenUsage(),
    )


def _rows(case: str, res: JudgeResult) -> list[StoredJudgeResult]:
    return [StoredJudgeResult(case_id=case, k=k, judge=res.judge, result=res) for k in (1, 2)]


async def test_free_rows_wait_for_a_batch_and_a_paid_result_writes_everything(
    tmp_path: Path,
) -> None:
    store = open_store(tmp_path / "runs.sqlite")
    store.create_run(manifest("r"))
    writer = ResultWriter(store, "r")

    free = _result("c0")
    await writer.add(_rows("c0", free), free)
    assert store.judge_results("r") == []  # a free result waits

    paid = _result("c1", TokenUsage(prompt_tokens=10, completion_tokens=2, calls=1))
    await writer.add(_rows("c1", paid), paid)
    stored = {(r.case_id, r.k) for r in store.judge_results("r")}
    assert stored == {("c0", 1), ("c0", 2), ("c1", 1), ("c1", 2)}  # written at once, with c0
    assert writer.waiting == []

    for i in range(FREE_ROWS // 2):  # two rows each: the last one fills a batch
        res = _result(f"f{i}")
        await writer.add(_rows(f"f{i}", res), res)
    assert len(store.judge_results("r")) == 4 + FREE_ROWS
    assert writer.waiting == []

    last = _result("z")
    await writer.add(_rows("z", last), last)
    assert len(store.judge_results("r")) == 4 + FREE_ROWS
    await writer.flush()
    assert len(store.judge_results("r")) == 6 + FREE_ROWS


class CountingStore(SqlRunStore):
    """The SQLite store, keeping the size of each judge-row transaction."""

    writes: list[int]

    def put_judge_results(self, run_id: str, results: Iterable[StoredJudgeResult]) -> None:
        rows = list(results)
        self.__dict__.setdefault("writes", []).append(len(rows))
        super().put_judge_results(run_id, rows)


async def test_writes_wait_in_a_worker_thread_and_share_a_transaction(tmp_path: Path) -> None:
    import asyncio
    import sqlite3
    import time

    store = open_store(tmp_path / "runs.sqlite")
    assert isinstance(store, SqlRunStore)
    store.__class__ = CountingStore
    store.create_run(manifest("r"))
    writer = ResultWriter(store, "r")
    other = sqlite3.connect(tmp_path / "runs.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's write in progress
    paid = [_result(f"p{i}", TokenUsage(prompt_tokens=10, calls=1)) for i in range(5)]
    adds = asyncio.gather(*(writer.add(_rows(f"p{i}", r), r) for i, r in enumerate(paid)))
    ticks, started = 0, time.perf_counter()
    while time.perf_counter() - started < 0.5:
        await asyncio.sleep(0.01)
        ticks += 1
    assert not adds.done() and ticks >= 20  # waiting for the lock, the loop turning
    other.execute("COMMIT")
    other.close()
    await asyncio.wait_for(adds, 30)
    assert len(store.judge_results("r")) == 10
    assert store.writes == [2, 8]  # the first result alone, the others together


async def test_a_failed_write_fails_every_caller_waiting_and_every_later_one() -> None:
    import asyncio

    from ragjudge.sweep.commit import Committer

    calls: list[list[int]] = []

    def write(items: list[int]) -> None:
        calls.append(items)
        raise OSError("disk full")

    committer: Committer[int] = Committer(write)
    committer.add([1])
    committer.add([2])
    got = await asyncio.gather(committer.settle(), committer.settle(), return_exceptions=True)
    assert all(isinstance(e, OSError) and "disk full" in str(e) for e in got)
    committer.add([3])
    with pytest.raises(OSError, match="disk full"):
        await asyncio.wait_for(committer.settle(), 5)  # no retry loop, no hang
    assert calls == [[1, 2]]
