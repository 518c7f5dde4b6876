"""The LLM call cache file (``ragjudge.llm.cache.LLMCache``): lookups beside writes."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from ragjudge.io.diagnostics import DataWarning
from ragjudge.llm.cache import CHECKPOINT_EVERY, CachedCall, LLMCache


def test_a_lookup_does_not_wait_for_a_write_in_progress(tmp_path: Path) -> None:
    """The client looks calls up on its event loop while a worker thread commits its writes:
    a lookup must not wait for a write, here one stuck behind another process's transaction."""
    path = tmp_path / "cache.sqlite"
    cache = LLMCache(path)
    cache.put("a", model="m", prompt="p@1", call=CachedCall(texts=["x"]))
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    other.execute("INSERT INTO llm_cache VALUES ('c', 'm', 'p@1', '[\"z\"]', 1, 2, 0, 0)")
    writer = threading.Thread(
        target=cache.put,
        args=("b",),
        kwargs={"model": "m", "prompt": "p@1", "call": CachedCall(texts=["y"])},
    )
    writer.start()
    time.sleep(0.3)  # the put now waits for the write lock
    got: list[CachedCall | None] = []
    reader = threading.Thread(target=lambda: got.append(cache.get("a")))
    started = time.perf_counter()
    reader.start()
    reader.join(5)
    waited = time.perf_counter() - started
    other.execute("COMMIT")
    writer.join(10)
    reader.join(30)
    assert waited < 2, f"the lookup waited {waited:.1f} s for the write"
    assert got and got[0] is not None and got[0].texts == ["x"]
    assert not writer.is_alive()
    later_b, later_c = cache.get("b"), cache.get("c")  # both writes visible to lookups
    assert later_b is not None and later_b.texts == ["y"]
    assert later_c is not None and later_c.texts == ["z"] and later_c.completion_tokens == 2
    cache.close()
    other.close()


def _rows(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {r[0] for r in db.execute("SELECT key FROM llm_cache")}


def test_a_write_that_would_wait_is_not_made_by_put_nowait(tmp_path: Path) -> None:
    """``put_nowait`` runs on the client's event loop: while another process holds the file's
    write lock it returns False at once, keeping nothing, and ``put`` still waits its turn."""
    path = tmp_path / "cache.sqlite"
    cache = LLMCache(path)
    assert cache.put_nowait("a", model="m", prompt="p@1", call=CachedCall(texts=["x"]))
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    started = time.perf_counter()
    kept = cache.put_nowait("b", model="m", prompt="p@1", call=CachedCall(texts=["y"]))
    assert not kept and time.perf_counter() - started < 1
    failed: list[BaseException] = []

    def put() -> None:
        try:
            cache.put("b", model="m", prompt="p@1", call=CachedCall(texts=["y"]))
        except BaseException as exc:  # the busy timeout must be back to 30 s
            failed.append(exc)

    writer = threading.Thread(target=put)
    writer.start()
    time.sleep(0.5)
    assert writer.is_alive()  # waiting for the write lock, not failed
    other.execute("COMMIT")
    writer.join(10)
    assert not failed and not writer.is_alive()
    assert _rows(path) == {"a", "b"}
    cache.close()
    other.close()


def test_the_log_is_checkpointed_by_put_and_never_by_put_nowait(tmp_path: Path) -> None:
    """A checkpoint copies the write-ahead log into the file and waits for the disk: only
    ``put`` (a worker thread's) does it, once ``CHECKPOINT_EVERY`` commits have gathered;
    ``put_nowait`` declines from then on until a ``put`` has run."""
    path = tmp_path / "cache.sqlite"
    cache = LLMCache(path)
    size = path.stat().st_size
    call = CachedCall(texts=["a reply of some length " * 20])
    for i in range(CHECKPOINT_EVERY):
        assert cache.put_nowait(f"k{i}", model="m", prompt="p@1", call=call)
    assert path.stat().st_size == size  # every row still in the log only
    assert not cache.put_nowait("due", model="m", prompt="p@1", call=call)
    cache.put("due", model="m", prompt="p@1", call=call)
    assert path.stat().st_size > size  # checkpointed into the file
    assert cache.put_nowait("after", model="m", prompt="p@1", call=call)
    assert len(_rows(path)) == CHECKPOINT_EVERY + 2
    cache.close()


def test_a_damaged_row_found_while_another_process_writes_is_a_miss_at_once(
    tmp_path: Path,
) -> None:
    """A lookup runs on the client's event loop: finding a damaged row while another process
    holds the file's write lock, it counts a miss at once instead of waiting to delete the
    row; the answer sent again replaces the row once the lock is free."""
    path = tmp_path / "cache.sqlite"
    cache = LLMCache(path)
    cache.put("a", model="m", prompt="p@1", call=CachedCall(texts=["x"]))
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("UPDATE llm_cache SET texts = '[\"cut off'")
    other.execute("BEGIN IMMEDIATE")
    started = time.perf_counter()
    with pytest.warns(DataWarning, match="dropped"):
        missed = cache.get("a")
    assert missed is None and cache.dropped == 1 and time.perf_counter() - started < 1
    other.execute("COMMIT")
    assert _rows(path) == {"a"}  # kept: not deleted while the lock was held elsewhere
    assert cache.get("a") is None and cache.dropped == 2  # still a miss, counted again
    cache.put("a", model="m", prompt="p@1", call=CachedCall(texts=["y"]))
    again = cache.get("a")
    assert again is not None and again.texts == ["y"]
    cache.close()
    other.close()
