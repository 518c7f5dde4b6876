"""On-disk caches of document vectors, keyed by model name and document content hash.

``VectorCache``: one SQLite file per model under ``RAGJUDGE_HOME/embeddings/``, one row per
content hash (sha256 of title + text) holding the float32 vector (or, for token embeddings, a
float16 (n_tokens, dim) matrix; ``sentences``: float32 vectors of the offline judges' sentences,
keyed by the text's sha256). A document seen before, under any id, is never encoded again;
an edited document has a new hash and is encoded once. A damaged row (a vector of the wrong
size, a NaN) is dropped and encoded again, with one warning naming the file. Threads may share
one instance: its SQLite connection is used by one of them at a time, and ``lookup`` encodes
outside that lock, so two threads encode at once.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from ragjudge.errors import sqlite_file_error
from ragjudge.home import state_path
from ragjudge.io.diagnostics import DataWarning


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


class VectorCache:
    """Vectors by content hash for one model (``kind`` separates pooled from token vectors)."""

    def __init__(self, model: str, kind: str = "pooled") -> None:
        self.path = state_path("embeddings", f"{_safe(model)}.{kind}.sqlite")
        self.dtype = np.float16 if kind == "tokens" else np.float32
        # Workers of one run share the file: wait up to 30 s for another process's write or
        # its WAL recovery (after a killed process) instead of failing the judge.
        self._db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
        self._lock = threading.Lock()  # the connection, one thread at a time
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS vec (hash TEXT PRIMARY KEY, rows INT, dim INT, "
                "data BLOB)"
            )
        except sqlite3.DatabaseError as exc:
            raise sqlite_file_error(self.path, exc) from None
        self.encoded = 0
        """Texts encoded (cache misses) by this instance."""
        self.dropped = 0
        """Damaged rows dropped (``get_many``)."""

    def get_many(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``hashes``; a damaged row (a size that does not match its
        shape, a value that is not finite) is dropped and left out, so it is encoded again
        (``dropped`` counts them; the first warns once, naming the file)."""
        found: dict[str, np.ndarray] = {}
        damaged: list[str] = []
        unique = list(dict.fromkeys(hashes))
        with self._lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for h, rows, dim, data in self._db.execute(
                    f"SELECT hash, rows, dim, data FROM vec WHERE hash IN ({marks})", chunk
                ):
                    arr = self._decode(rows, dim, data)
                    if arr is None:
                        damaged.append(h)
                    else:
                        found[h] = arr
            if damaged:
                self._drop(damaged)
        return found

    def _decode(self, rows: object, dim: object, data: object) -> np.ndarray | None:
        """A stored row as a float32 ``(rows, dim)`` array, None when it is damaged."""
        if not (isinstance(rows, int) and isinstance(dim, int) and isinstance(data, bytes)):
            return None
        if rows < 1 or dim < 1 or len(data) != rows * dim * np.dtype(self.dtype).itemsize:
            return None
        arr = np.frombuffer(data, dtype=self.dtype).reshape(rows, dim).astype(np.float32)
        return arr if np.isfinite(arr).all() else None

    def _drop(self, hashes: list[str]) -> None:
        """Forget damaged rows, count them, warn on the first (a cache is disposable); the
        caller holds the lock."""
        with self._db:
            self._db.executemany("DELETE FROM vec WHERE hash = ?", [(h,) for h in hashes])
        if not self.dropped:
            warnings.warn(
                DataWarning(
                    f"{self.path}: {len(hashes)} damaged vector(s) dropped and encoded again "
                    "(the cache is disposable; further damaged ones are dropped too, and counted)"
                ),
                stacklevel=4,
            )
        self.dropped += len(hashes)

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        rows = [
            (h, int(a.reshape(-1, a.shape[-1]).shape[0]), int(a.shape[-1]), a.astype(self.dtype))
            for h, a in items.items()
        ]
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO vec VALUES (?, ?, ?, ?)",
                [(h, r, d, a.tobytes()) for h, r, d, a in rows],
            )

    def lookup(
        self,
        hashes: Sequence[str],
        texts: Sequence[str],
        encode: Callable[[list[str]], list[np.ndarray]],
        *,
        chunk: int = 256,
        progress: Callable[[int], None] | None = None,
    ) -> list[np.ndarray]:
        """The vector of every text, encoding (in chunks, saved as they finish) only misses."""
        have = self.get_many(hashes)
        missing: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            if h not in have:
                missing.setdefault(h, t)
        todo = list(missing.items())
        if progress is not None:
            progress(len(hashes) - len(todo))
        for start in range(0, len(todo), chunk):
            part = todo[start : start + chunk]
            vecs = encode([t for _, t in part])
            new = {h: np.asarray(v, dtype=np.float32) for (h, _), v in zip(part, vecs, strict=True)}
            self.put_many(new)
            have.update({h: v.astype(self.dtype).astype(np.float32) for h, v in new.items()})
            self.encoded += len(part)
            if progress is not None:
                progress(len(part))
        return [have[h] for h in hashes]

    def close(self) -> None:
        with self._lock:
            self._db.close()
