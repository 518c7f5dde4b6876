"""One writer per run on a PostgreSQL store: a session-level advisory lock.

The lease is ``pg_try_advisory_lock(key)`` on a connection kept open for the run, ``key`` a
64-bit hash of ``ragjudge-run:<run_id>``. The server drops it when that session ends: at once
when the writer's process dies (``kill -9`` closes its socket), and within about a minute when
its machine is lost (the session sets ``tcp_keepalives_idle=20``, ``_interval=10``,
``_count=3``, so the server closes a silent connection after ~50 s). A second writer is refused
with the holder's ``application_name`` (``ragjudge pid N on HOST``); ``writer_alive`` reads
``pg_locks`` and takes nothing.
"""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Iterable

import sqlalchemy as sa

from ragjudge.store.base import RunLockedError
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
    """``with AdvisoryLease(engine, run_id):`` holds the run's lease for the block."""

    def __init__(self, engine: sa.Engine, run_id: str) -> None:
        self.engine = engine
        self.run_id = run_id
        self._conn: sa.Connection | None = None

    def acquire(self) -> None:
        conn = self.engine.connect()
        conn.execution_options(isolation_level="AUTOCOMMIT")
        for name, value in _KEEPALIVE.items():
            conn.execute(sa.text(f"SET {name} = {int(value)}"))
        key = lease_key(self.run_id)
        got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar_one()
        if not got:
            holder = conn.execute(_holder_query(key)).first()
            conn.close()
            who = (
                f"{holder[0] or 'a session'} from {holder[1] or 'the server host'}"
                if holder
                else "?"
            )
            raise RunLockedError(
                f"run {self.run_id} is being written by another process ({who}); wait for it "
                "to finish, or stop it before resuming"
            )
        self._conn = conn

    def release(self) -> None:
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

    def lease(self, run_id: str) -> AdvisoryLease:
        return AdvisoryLease(self.engine, run_id)

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
