"""One writer per run on a PostgreSQL store: a session-level advisory lock.

The lease is ``pg_try_advisory_lock(key)`` on a connection kept open for the run, ``key`` a
64-bit hash of ``ragjudge-run:<run_id>``. The server drops it when that session ends: at once
when the writer's process dies (``kill -9`` closes its socket), and within about a minute when
its machine is lost (the session sets ``tcp_keepalives_idle=20``, ``_interval=10``,
``_count=3``, so the server closes a silent connection after ~50 s). A second writer is refused
with the holder's ``application_name`` (``ragjudge pid N on HOST``); ``writer_alive`` reads
``pg_locks`` and takes nothing.

A live writer loses the lease when its session ends under it: the server restarted (or someone
ended the backend), while the store's own writes reconnect by themselves. So before each write
to a leased run the store calls ``AdvisoryLeases.check``: one ``SELECT 1`` on the lease's
connection, which answers exactly while the session lives, and a session-level advisory lock is
held until that session unlocks it (only ``release`` does) or ends. A connection that fails is
discarded and the lock asked for again on a new one: granted (no one took the run meanwhile),
the write goes on; refused, ``LeaseLostError`` names the new holder, and every later check of
the lease raises it again, so this process writes nothing more of the run (not even its status:
the run is the other writer's now).
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections.abc import Iterable

import sqlalchemy as sa

from ragjudge.store.base import LeaseLostError, RunLockedError
from ragjudge.store.sql import Lease, Leases

_KEEPALIVE = {"tcp_keepalives_idle": 20, "tcp_keepalives_interval": 10, "tcp_keepalives_count": 3}


def lease_key(run_id: str) -> int:
    """The advisory lock key of ``run_id``: a signed 64-bit hash."""
    digest = hashlib.blake2b(f"ragjudge-run:{run_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def application_name() -> str:
    """How this process names itself to the server (shown to a refused second writer)."""
    return f"ragjudge pid {os.getpid()} on {socket.gethostname()}"[:63]


def _holder_query(key: int) -> sa.TextClause:
    """The session holding ``key`` (``pg_locks`` splits a bigint key into classid, objid)."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    return sa.text(
        "SELECT a.application_name, a.client_addr FROM pg_locks l "
        "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' "
        "AND l.granted AND l.classid = :hi AND l.objid = :lo AND l.objsubid = 1"
    ).bindparams(hi=unsigned >> 32, lo=unsigned & 0xFFFFFFFF)


class AdvisoryLease(Lease):
    """``with AdvisoryLease(engine, run_id, held):`` holds the run's lease for the block, and
    is in ``held`` (its ``AdvisoryLeases``' leases by run id) meanwhile."""

    def __init__(self, engine: sa.Engine, run_id: str, held: dict[str, AdvisoryLease]) -> None:
        self.engine = engine
        self.run_id = run_id
        self._held = held
        self._conn: sa.Connection | None = None
        self._lost = ""
        """Why the lease is lost for good (empty while held or re-takeable)."""
        self._guard = threading.Lock()  # the store writes from worker threads

    def _take(self) -> str | None:
        """Ask for the lock on a new connection, kept when granted: None, else who holds it."""
        conn = self.engine.connect()
        key = lease_key(self.run_id)
        try:
            conn.execution_options(isolation_level="AUTOCOMMIT")
            for name, value in _KEEPALIVE.items():
                conn.execute(sa.text(f"SET {name} = {int(value)}"))
            got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar_one()
            if got:
                self._conn = conn
                return None
            holder = conn.execute(_holder_query(key)).first()
        except BaseException:
            conn.invalidate()  # whatever it holds goes with its session
            conn.close()
            raise
        conn.close()
        if holder is None:
            return "?"
        return f"{holder[0] or 'a session'} from {holder[1] or 'the server host'}"

    def acquire(self) -> None:
        with self._guard:
            who = self._take()
            if who is not None:
                raise RunLockedError(
                    f"run {self.run_id} is being written by another process ({who}); wait for "
                    "it to finish, or stop it before resuming"
                )
            self._held[self.run_id] = self

    def check(self) -> None:
        """The lease is still held (its session answers), or taken again on a new session
        when the old one ended; else ``LeaseLostError``, on this call and every later one."""
        with self._guard:
            if self._lost:
                raise LeaseLostError(self._lost)
            if self._conn is not None and not self._conn.invalidated:
                try:
                    self._conn.exec_driver_sql("SELECT 1")
                    return
                except sa.exc.SQLAlchemyError:
                    pass  # the session ended, and its lock with it
            self._drop()
            who = self._take()  # a server still down raises: the store's retry waits for it
            if who is not None:
                self._lost = (
                    f"lost the lease on run {self.run_id} (the database connection was reset) "
                    f"and another process took it over ({who}); this process stopped writing "
                    "the run: let that one finish, or stop it and run the same command again "
                    "to resume"
                )
                raise LeaseLostError(self._lost)

    def _drop(self) -> None:
        """Close the lease's connection for good: never back to the pool, where a live session
        would keep the lock (``invalidate`` closes the driver's connection)."""
        if self._conn is not None:
            self._conn.invalidate()
            self._conn.close()
            self._conn = None

    def release(self) -> None:
        with self._guard:
            self._held.pop(self.run_id, None)
            self._lost = ""
            if self._conn is not None:
                try:
                    self._conn.execute(
                        sa.text("SELECT pg_advisory_unlock(:k)"), {"k": lease_key(self.run_id)}
                    )
                except sa.exc.SQLAlchemyError:
                    pass  # the session is gone, and its lock with it
                finally:
                    self._conn.close()
                    self._conn = None


class AdvisoryLeases(Leases):
    """The leases of the PostgreSQL store behind ``engine``."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self._held: dict[str, AdvisoryLease] = {}
        """The leases held through this object, by run id."""

    def lease(self, run_id: str) -> AdvisoryLease:
        return AdvisoryLease(self.engine, run_id, self._held)

    def check(self, run_ids: Iterable[str]) -> None:
        """``Leases.check``: ``AdvisoryLease.check`` of each run among ``run_ids`` leased here
        (one round trip each; a run not leased here costs nothing)."""
        for run_id in run_ids:
            lease = self._held.get(run_id)
            if lease is not None:
                lease.check()

    def writer_alive(self, run_id: str) -> bool:
        with self.engine.connect() as conn:
            return conn.execute(_holder_query(lease_key(run_id))).first() is not None

    def writers_alive(self, run_ids: Iterable[str]) -> set[str]:
        """One read of ``pg_locks`` for every run asked about."""
        keys = {lease_key(r) & 0xFFFFFFFFFFFFFFFF: r for r in run_ids}
        if not keys:
            return set()
        with self.engine.connect() as conn:
            held = conn.execute(
                sa.text(
                    "SELECT classid, objid FROM pg_locks WHERE locktype = 'advisory' "
                    "AND granted AND objsubid = 1"
                )
            )
            return {keys[(hi << 32) | lo] for hi, lo in held if (hi << 32) | lo in keys}
