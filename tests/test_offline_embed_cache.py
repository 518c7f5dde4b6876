"""The offline judges' sentence vectors persist in RAGJUDGE_HOME: a second process (a second
night over the same corpus) encodes only texts it has not seen, and gets the same vectors."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ragjudge.judges.offline.embed import EmbeddingCache


class CountingEncoder:
    """Deterministic unit vectors from the text's bytes; records what it was asked to encode."""

    name = "counting-encoder"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.seen += list(texts)
        out = []
        for t in texts:
            v = np.random.default_rng(list(t.encode())).standard_normal(8).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


def test_second_cache_reads_vectors_from_disk() -> None:
    first_enc, second_enc = CountingEncoder(), CountingEncoder()
    first = EmbeddingCache(first_enc, persist=True)
    a = first.vectors(["The light was first lit in 1811.", "Bees dance."])
    second = EmbeddingCache(second_enc, persist=True)  # a new process: empty memory
    b = second.vectors(["Bees dance.", "The light was first lit in 1811.", "A new sentence."])
    assert second_enc.seen == ["A new sentence."]
    assert np.array_equal(b[0], a[1]) and np.array_equal(b[1], a[0])
    assert b.dtype == np.float32


def test_without_persist_nothing_is_shared() -> None:
    enc = CountingEncoder()
    EmbeddingCache(CountingEncoder()).vectors(["x y"])
    EmbeddingCache(enc).vectors(["x y"])
    assert enc.seen == ["x y"]


class MeetingEncoder(CountingEncoder):
    """Encodes only once two threads are inside ``encode`` at the same time (a barrier): an
    encoder run under a lock the other thread waits on would time out here."""

    def __init__(self) -> None:
        super().__init__()
        self.barrier = threading.Barrier(2, timeout=5)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.barrier.wait()
        return super().encode(texts)


def test_two_threads_sharing_the_disk_cache_encode_at_the_same_time() -> None:
    enc = MeetingEncoder()
    cache = EmbeddingCache(enc, persist=True)
    texts = [["The tower was finished in 1810."], ["Drones do not sting."]]
    with ThreadPoolExecutor(2) as pool:
        out = list(pool.map(cache.vectors, texts))
    assert sorted(enc.seen) == sorted(t for batch in texts for t in batch)
    reader = CountingEncoder()
    again = EmbeddingCache(reader, persist=True)  # both were written to disk
    assert np.array_equal(again.vectors(texts[0])[0], out[0][0])
    assert np.array_equal(again.vectors(texts[1])[0], out[1][0])
    assert reader.seen == []
