"""One writer per run on a SQLite store: an exclusive ``flock`` on a lock file beside the store.

The operating system drops the lock when its process dies (even by ``kill -9``), so a crashed
run can be resumed at once, while a second process that tries to write the same run while the
first is alive gets a clear error naming the holder's pid. ``writer_alive`` asks whether some
live process holds a run's lock: a run stored as ``running`` without one was killed, and the
store shows it as ``interrupted``.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable
from pathlib import Path

from ragjudge.store.base import RunLockedError
from ragjudge.store.sql import Lease, Leases


def lock_path(store_path: Path, run_id: str) -> Path:
    """The lock file of ``run_id`` in the store at ``store_path``."""
    return store_path.parent / "locks" / f"{store_path.stem}-{run_id}.lock"


def writer_alive(store_path: Path, run_id: str) -> bool:
    """True when a live process holds the run's lock (its lock cannot be taken now)."""
    path = lock_path(store_path, run_id)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False  # never locked here (or the lock folder is gone): no live writer
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops a lock taken here
    return False


class RunLock(Lease):
    """``with RunLock(store_path, run_id):`` holds the run's write lock for the block."""

    def __init__(self, store_path: Path, run_id: str) -> None:
        self.path = lock_path(store_path, run_id)
        self.run_id = run_id
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunLockedError(
                f"run {self.run_id} is being written by another process (pid {holder}); "
                "wait for it to finish, or stop it before resuming"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


class FileLeases(Leases):
    """The leases of the SQLite store at ``store_path``: ``RunLock`` files in ``locks/``."""

    def __init__(self, store_path: Path) -> None:
        self.store_path = store_path

    def lease(self, run_id: str) -> RunLock:
        return RunLock(self.store_path, run_id)

    def writer_alive(self, run_id: str) -> bool:
        return writer_alive(self.store_path, run_id)

    def writers_alive(self, run_ids: Iterable[str]) -> set[str]:
        """One listing of ``locks/``, then a probe only of the runs that have a lock file (a
        run never locked here has no live writer)."""
        folder = lock_path(self.store_path, "").parent
        try:
            present = set(os.listdir(folder))
        except OSError:
            return set()
        return {
            r
            for r in run_ids
            if lock_path(self.store_path, r).name in present and writer_alive(self.store_path, r)
        }
