"""Content-addressed cache of successful LLM calls in SQLite (WAL).

Key: SHA-256 of the canonical JSON of (model, sampling parameters, prompt name and version,
rendered messages, schema JSON). Value: the raw texts of the choices and the usage. The API
key never enters the key or the value. Each write is its own transaction, so concurrent
workers (threads or processes) and a crash leave the file consistent; a crashed run resumes
paying only for the calls it had not finished. ``put_nowait`` commits only when that needs no
wait (the client calls it on its event loop); the write-ahead log is checkpointed by ``put``
every ``CHECKPOINT_EVERY`` commits, never by ``put_nowait``. Only successful calls are
stored. A damaged row is a miss: dropped, sent again and counted, with one warning naming the
file. A corrupt, truncated file raises ``StateFileError`` naming it; in a read-only folder the
cache is read only (hits still served, nothing new kept).

Where a client's cache lives is ``ragjudge.llm.opencache``'s choice (this file, or a table in
a team's PostgreSQL, ``ragjudge.llm.servercache``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from ragjudge.errors import sqlite_file_error
from ragjudge.home import state_path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    texts TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    estimated INTEGER NOT NULL,
    created REAL NOT NULL
)
"""


class CachedCall(BaseModel):
    texts: list[str]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False


def stored_call(
    texts: Any, prompt_tokens: Any, completion_tokens: Any, estimated: Any
) -> CachedCall | None:
    """A stored row as a ``CachedCall``; None when it is damaged (not the stored form: texts
    not a JSON list of strings, or empty; a count that is not a number)."""
    try:
        call = CachedCall(
            texts=json.loads(texts),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            estimated=estimated,
        )
    except (TypeError, ValueError):  # JSONDecodeError and ValidationError are ValueErrors
        return None
    return call if call.texts else None


def warn_dropped(where: str) -> None:
    """The one warning of a cache's first damaged row, naming the cache (file or table)."""
    from ragjudge.io.diagnostics import DataWarning

    warnings.warn(
        DataWarning(
            f"{where}: a damaged entry was dropped and its call is sent again (the "
            "cache is disposable; further damaged entries are dropped too, and counted)"
        ),
        stacklevel=5,
    )


@runtime_checkable
class CallCache(Protocol):
    """Where the client looks a call up before sending it, and keeps it after (``LLMCache``;
    on a Ray worker, the driver's ``LLMCache`` behind an actor)."""

    def get(self, key: str) -> CachedCall | None: ...

    def put(self, key: str, *, model: str, prompt: str, call: CachedCall) -> None: ...


@runtime_checkable
class NonBlockingPut(Protocol):
    """A cache that can commit a call on the caller's thread when that needs no wait
    (``LLMCache``). ``put_nowait`` returns False, keeping nothing, when it would have to wait;
    the caller then ``put``s from a worker thread."""

    def put_nowait(self, key: str, *, model: str, prompt: str, call: CachedCall) -> bool: ...


@runtime_checkable
class AwaitableGet(Protocol):
    """A cache whose look-up waits on another process (a database server, a Ray actor). The
    client awaits ``aget`` instead of calling ``get``, so the event loop keeps turning (other
    calls' replies arrive) while the answer travels."""

    async def aget(self, key: str) -> CachedCall | None: ...


CHECKPOINT_EVERY = 256
"""Commits between two checkpoints of the cache file's write-ahead log (a little more often than
SQLite's own default of 1,000 log pages: a commit of a judge's reply writes two to three)."""

_BUSY_TIMEOUT_MS = 30000


def cache_key(
    *,
    model: str,
    sampling: dict[str, Any],
    prompt: str,
    messages: list[dict[str, Any]],
    schema_json: str | None,
) -> str:
    """SHA-256 hex of the canonical JSON of everything that determines the answer."""
    payload = json.dumps(
        {
            "model": model,
            "sampling": sampling,
            "prompt": prompt,
            "messages": messages,
            "schema": schema_json,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class LLMCache:
    """The cache file (default ``<RAGJUDGE_HOME>/cache.sqlite``); safe to share."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else state_path("cache.sqlite")
        self.location = str(self.path)
        """Where the cache is, as messages name it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        """Held while the writing connection is used (puts come from worker threads)."""
        self._read_lock = self._lock
        self._commits = 0
        """Commits since the last checkpoint."""
        self.dropped = 0
        """Damaged rows dropped (``get``)."""
        self.read_only = not os.access(self.path.parent, os.W_OK) or (
            self.path.exists() and not os.access(self.path, os.W_OK)
        )
        """In a read-only folder the cache is read (``immutable``) and ``put`` keeps nothing."""
        with self._guard():
            if self.read_only:
                target = f"{self.path.resolve().as_uri()}?immutable=1"
                exists = self.path.exists()
                self._db = sqlite3.connect(
                    target if exists else ":memory:",
                    uri=exists,
                    check_same_thread=False,
                    isolation_level=None,
                )
                if not exists:
                    self._db.execute(_SCHEMA)
                self._db.execute("PRAGMA query_only=ON")
                self._db.execute("SELECT COUNT(*) FROM llm_cache")  # a corrupt file fails here
                self._reader = self._db
                return
            self._db = self._connect()
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            # checkpoints (which fsync) only where ``put`` runs, in a worker thread
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._db.execute(_SCHEMA)
            # a second connection for lookups made while a put holds the first: under WAL a
            # reader never waits for a writer, so a lookup on the event loop does not wait for
            # a batch of puts being committed in a worker thread (or a checkpoint's fsync)
            self._reader = self._connect()
            self._reader.execute("PRAGMA query_only=ON")
            self._read_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        """A connection to the file in autocommit mode, usable from any thread (each is used
        under its lock), waiting up to the busy timeout for another connection's write."""
        return sqlite3.connect(
            self.path,
            timeout=_BUSY_TIMEOUT_MS / 1000,
            check_same_thread=False,
            isolation_level=None,
        )

    @contextmanager
    def _named_failures(self) -> Iterator[None]:
        """A ``sqlite3`` failure turned into an error naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise sqlite_file_error(self.path, exc) from None

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """The writing connection's lock held, failures named (``_named_failures``)."""
        with self._lock, self._named_failures():
            yield

    def get(self, key: str) -> CachedCall | None:
        """The cached call under ``key``; a damaged row (not the stored form) is a miss: it is
        dropped (``dropped`` counts them), the call is sent again and its answer kept, and
        the first drop warns once, naming the file."""
        # the writing connection when it is free (its page cache is warm; another connection's
        # is emptied by every write), else the reading one, which never waits for a write
        db, lock = self._db, self._lock
        if not lock.acquire(blocking=False):
            db, lock = self._reader, self._read_lock
            lock.acquire()
        try:
            with self._named_failures():
                row = db.execute(
                    "SELECT texts, prompt_tokens, completion_tokens, estimated "
                    "FROM llm_cache WHERE key = ?",
                    (key,),
                ).fetchone()
        finally:
            lock.release()
        if row is None:
            return None
        call = stored_call(*row)
        if call is None:
            self._drop(key)
        return call

    def _drop(self, key: str) -> None:
        """Forget a damaged row when that needs no wait (``_nowait``; a lookup may run on the
        client's event loop), count it, warn on the first. A row not deleted (a read-only
        cache, the file's write lock held elsewhere) is replaced when the call sent again is
        kept, and is a miss until then."""
        if not self.read_only:
            self._nowait(lambda: self._db.execute("DELETE FROM llm_cache WHERE key = ?", (key,)))
        self.dropped += 1
        if self.dropped == 1:
            warn_dropped(str(self.path))

    def put(self, key: str, *, model: str, prompt: str, call: CachedCall) -> None:
        """Commit ``call`` under ``key``, waiting up to the busy timeout (30 s) for another
        connection's write; a checkpoint of the write-ahead log follows when one is due."""
        if self.read_only:
            return
        with self._guard():
            self._insert(key, model, prompt, call)
            if self._commits >= CHECKPOINT_EVERY:
                self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                self._commits = 0

    def put_nowait(self, key: str, *, model: str, prompt: str, call: CachedCall) -> bool:
        """``put`` if that needs no wait (``NonBlockingPut``): False, keeping nothing, when this
        cache's writing connection is in use, another connection holds the file's write lock,
        or a checkpoint is due. An insert into the write-ahead log under ``synchronous=NORMAL``
        writes to the page cache and does not wait for the disk."""
        if self.read_only:
            return True
        if self._commits >= CHECKPOINT_EVERY:
            return False
        return self._nowait(lambda: self._insert(key, model, prompt, call))

    def _nowait(self, write: Callable[[], object]) -> bool:
        """Run ``write`` on the writing connection with a busy timeout of 0: False, having
        done nothing, when the connection is in use or another connection holds the file's
        write lock (``SQLITE_BUSY``); other failures raise, naming the file."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            with self._named_failures():
                self._db.execute("PRAGMA busy_timeout=0")
                try:
                    write()
                except sqlite3.OperationalError as exc:
                    if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
                        raise
                    return False
                finally:
                    self._db.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        finally:
            self._lock.release()
        return True

    def _insert(self, key: str, model: str, prompt: str, call: CachedCall) -> None:
        """One row, its own transaction (the writing connection's lock held)."""
        self._db.execute(
            "INSERT OR REPLACE INTO llm_cache VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                model,
                prompt,
                json.dumps(call.texts, ensure_ascii=False),
                call.prompt_tokens,
                call.completion_tokens,
                int(call.estimated),
                time.time(),
            ),
        )
        self._commits += 1

    def __len__(self) -> int:
        with self._guard():
            return int(self._db.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])

    def stats(self) -> dict[str, Any]:
        """Entries per (model, prompt)."""
        with self._guard():
            rows = self._db.execute(
                "SELECT model, prompt, COUNT(*) FROM llm_cache GROUP BY model, prompt"
            ).fetchall()
        return {"entries": sum(r[2] for r in rows), "by_prompt": [list(r) for r in rows]}

    def close(self) -> None:
        if self._reader is not self._db:
            with self._read_lock:
                self._reader.close()
        with self._lock:
            self._db.close()
