"""Group commits to the run store off the event loop (``Committer``).

A sweep writes its LLM ledger entries and judge rows while other calls are in flight. Written
on the event loop, each transaction held every reply that arrived meanwhile: a round trip or
more to a PostgreSQL server, and up to the busy timeout when another process held a SQLite
file's write lock. A ``Committer`` writes in a worker thread instead, and the callers that
wait for the same rows share one transaction.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class Committer(Generic[T]):
    """Items on their way to the store through ``write(items)`` (one transaction), run in a
    worker thread. ``add`` queues items (no I/O); ``settle()`` returns once every item added
    before it was written. Writes run one at a time, in the order the items were added, each
    taking every item waiting when it starts, so callers arriving while a write runs share the
    next one. A write that fails fails every ``settle`` from then on, with its error (the run
    ends on it, as it did when the write ran on the loop)."""

    def __init__(self, write: Callable[[list[T]], None]) -> None:
        self._write = write
        self.waiting: list[T] = []
        self._added = 0
        self._written = 0
        self._flight: asyncio.Task[None] | None = None
        self._error: BaseException | None = None

    def add(self, items: Iterable[T]) -> None:
        before = len(self.waiting)
        self.waiting.extend(items)
        self._added += len(self.waiting) - before

    async def settle(self) -> None:
        target = self._added
        while self._written < target:
            if self._error is not None:
                raise self._error
            if self._flight is None:
                batch, self.waiting = self.waiting, []
                self._flight = asyncio.get_running_loop().create_task(self._commit(batch))
            await asyncio.shield(self._flight)

    async def _commit(self, batch: list[T]) -> None:
        try:
            await asyncio.to_thread(self._write, batch)
        except BaseException as exc:
            self._error = exc
            raise
        else:
            self._written += len(batch)
        finally:
            self._flight = None
