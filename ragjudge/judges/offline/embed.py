"""Sentence embeddings for the offline judges, cached per process and (``shared_cache``) on disk.

The five judges of one item see the same question, answer, reference and context sentences; the
k-sweep judges the same contexts at several k. ``EmbeddingCache.vectors(texts)`` encodes only the
texts it has not seen, in ONE batch, and keeps at most ``max_items`` vectors (least recently used
evicted). ``warm(texts)`` encodes many items' texts in one batch: ``OfflineJudge.prepare`` learns
which texts a judge will ask for from the judge's ``texts`` (or, where it cannot list them, a dry
pass of the judge over a ``TextRecorder``), then warms the cache with them; a cold item is
about 1.6x faster than with the judges' small per-item batches (bench/bench_offline_judges.py).
With ``persist=True`` (the judges' shared cache) a miss is looked up first in
``RAGJUDGE_HOME/embeddings/<encoder name>.sentences.sqlite``
(``ragjudge.retrieval.cache.VectorCache``, keyed by the sha256 of the text, float32), so a
nightly run over the same corpus does not encode the same context sentences again; when that
file cannot be used (a read-only home, a corrupt file) the judges run without it and say so
once. The
judges' encoder is ``ragjudge.embedding.load_judge_encoder()`` (by default the shipped int8 ONNX
model).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ragjudge.io.diagnostics import DataWarning
from ragjudge.protocols import Encoder


class EmbeddingCache:
    """Text -> L2-normalised vector, encoding misses in one batch (LRU, thread-safe)."""

    def __init__(
        self, encoder: Encoder | None = None, *, max_items: int = 50_000, persist: bool = False
    ) -> None:
        self._encoder = encoder
        self.max_items = max_items
        self.persist = persist
        self._disk: Any = None
        self._disk_lock = threading.Lock()
        self._store: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._pending: dict[str, threading.Event] = {}
        """Texts some thread is encoding now, each with the event set when it is done."""
        self.encoded = 0
        """How many texts were actually encoded (misses), for benchmarks and tests."""

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            from ragjudge.embedding import load_judge_encoder

            self._encoder = load_judge_encoder()
        return self._encoder

    @property
    def encoder_name(self) -> str:
        """The encoder's name, known without loading the judges' model."""
        from ragjudge.embedding import judge_encoder_name

        return self._encoder.name if self._encoder is not None else judge_encoder_name()

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` (shape ``(len(texts), dim)``), encoding the misses in one batch
        (outside the lock, so threads sharing the cache encode at the same time). A miss that
        another thread is encoding is waited for, not encoded again; if that thread fails,
        the text is encoded here."""
        while True:
            with self._lock:
                missing = [t for t in dict.fromkeys(texts) if t not in self._store]
                if not missing:
                    return self._take(texts)
                mine = [t for t in missing if t not in self._pending]
                theirs = {self._pending[t] for t in missing if t in self._pending}
                done = threading.Event()
                self._pending.update(dict.fromkeys(mine, done))
            if mine:
                try:
                    vecs = self._encode(mine)
                    with self._lock:
                        for text, vec in zip(mine, vecs, strict=True):
                            self._store[text] = vec
                        self.encoded += len(mine)
                        if not theirs:
                            return self._take(texts)
                finally:
                    with self._lock:
                        for text in mine:
                            del self._pending[text]
                    done.set()
            for event in theirs:
                event.wait()

    def _take(self, texts: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``texts``, now the most recently used; the least recently
        used beyond ``max_items`` are evicted after. The caller holds the lock."""
        if not texts:
            return np.zeros((0, self._dim()), dtype=np.float32)
        out = np.array([self._store[t] for t in texts])  # np.stack: 3x the overhead
        for t in texts:
            self._store.move_to_end(t)
        while len(self._store) > self.max_items:
            self._store.popitem(last=False)
        return out

    def _encode(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts``: from the disk cache when ``persist`` (misses encoded and kept
        there, ``VectorCache.lookup``, which encodes outside its connection's lock, so threads
        sharing this cache encode at the same time), else encoded. The disk cache is
        disposable: when it cannot be opened, read or written (a read-only home, a corrupt
        file), the judges run without it and the first failure warns once, naming the file."""
        from ragjudge.errors import StateFileError

        if self.persist:
            hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
            try:
                disk = self._open_disk()
                if disk is not None:
                    found = disk.lookup(hashes, texts, lambda todo: list(self.encoder.encode(todo)))
                    return np.stack([v.reshape(-1) for v in found]).astype(np.float32)
            except (OSError, sqlite3.Error, StateFileError) as exc:
                self._without_disk(exc)
        return self.encoder.encode(texts)

    def _open_disk(self) -> Any:
        """The disk cache (``VectorCache``), opened at first use; None once it is off."""
        from ragjudge.retrieval.cache import VectorCache

        with self._disk_lock:
            if self.persist and self._disk is None:
                self._disk = VectorCache(self.encoder_name, kind="sentences")
            return self._disk if self.persist else None

    def _without_disk(self, exc: BaseException) -> None:
        """Stop using the disk cache after ``exc``, saying so once (another thread's failure
        after the first is not said again)."""
        from ragjudge.home import state_path

        with self._disk_lock:
            if not self.persist:
                return
            self.persist = False
            if self._disk is not None:
                self._disk.close()
                self._disk = None
        try:
            where = str(state_path("embeddings"))
        except OSError:
            where = f"{os.environ.get('RAGJUDGE_HOME') or '.ragjudge'}/embeddings"
        warnings.warn(
            DataWarning(
                f"{where}: the sentence vector cache is unusable ({exc}); the offline judges "
                "run without the disk cache (same scores, each text encoded again)"
            ),
            stacklevel=5,
        )

    def warm(self, texts: Iterable[str]) -> None:
        """Encode ``texts`` now, in one batch (nothing when there are none)."""
        todo = list(dict.fromkeys(texts))
        if todo:
            self.vectors(todo)

    def _dim(self) -> int:
        if self._store:
            return int(next(iter(self._store.values())).shape[0])
        return int(self.encoder.encode(["x"]).shape[1])


class TextRecorder:
    """An ``Encoder`` that encodes nothing: it records the texts asked for and returns the
    same unit vector for each (the first axis), so a judge run on it finishes without a model."""

    name = "text-recorder"

    def __init__(self, dim: int = 8) -> None:
        self.dim = dim
        self.texts: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 1.0
        return out


_SHARED: EmbeddingCache | None = None


def shared_cache() -> EmbeddingCache:
    """The process-wide cache over the judges' encoder (``load_judge_encoder``, loaded when
    first needed). A bad ``$RAGJUDGE_JUDGE_PRECISION`` is a ``ConfigError`` here, when the
    judges are made, not at their first item."""
    from ragjudge.embedding import precision_choice

    precision_choice()
    global _SHARED
    if _SHARED is None:
        _SHARED = EmbeddingCache(persist=True)
    return _SHARED
