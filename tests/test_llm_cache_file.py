"""The LLM call cache file (``ragjudge.llm.cache.LLMCache``): lookups beside writes."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from ragjudge.llm.cache import CachedCall, LLMCache


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
