"""Threads sharing the judges' vector cache encode a text once: a miss another thread is
encoding is waited for (the extractive generator's threads asked for the same context
sentences at once); when that thread fails, the waiting one encodes the text itself."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from ragjudge.judges.offline.embed import EmbeddingCache


class SlowEncoder:
    """Encodes after ``delay`` seconds; records each call's texts; fails when told to."""

    name = "slow-test-encoder"

    def __init__(self, delay: float = 0.3) -> None:
        self.delay = delay
        self.calls: list[list[str]] = []
        self.fail_next = False
        self.lock = threading.Lock()

    def encode(self, texts):
        with self.lock:
            self.calls.append(list(texts))
            fail, self.fail_next = self.fail_next, False
        time.sleep(self.delay)
        if fail:
            raise RuntimeError("encoder down")
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def in_thread(fn, *args):
    out: dict[str, object] = {}

    def run() -> None:
        try:
            out["value"] = fn(*args)
        except Exception as exc:  # the test reads it
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def test_a_text_in_flight_is_waited_for_not_encoded_again():
    enc = SlowEncoder()
    cache = EmbeddingCache(enc)
    first, got1 = in_thread(cache.vectors, ["alpha", "beta"])
    time.sleep(0.1)  # the first call is encoding
    second, got2 = in_thread(cache.vectors, ["beta", "gamma", "beta"])
    first.join()
    second.join()
    assert enc.calls == [["alpha", "beta"], ["gamma"]]
    assert cache.encoded == 3
    assert np.asarray(got1["value"]).tolist() == [[5, 1], [4, 1]]
    assert np.asarray(got2["value"]).tolist() == [[4, 1], [5, 1], [4, 1]]


def test_when_the_encoding_thread_fails_the_waiting_one_encodes():
    enc = SlowEncoder()
    enc.fail_next = True
    cache = EmbeddingCache(enc)
    first, got1 = in_thread(cache.vectors, ["delta"])
    time.sleep(0.1)
    second, got2 = in_thread(cache.vectors, ["delta"])
    first.join()
    second.join()
    assert isinstance(got1["error"], RuntimeError)
    assert np.asarray(got2["value"]).tolist() == [[5, 1]]
    assert enc.calls == [["delta"], ["delta"]] and cache.encoded == 1
    with pytest.raises(RuntimeError):  # nothing is left pending: a new failure is raised
        enc.fail_next = True
        cache.vectors(["epsilon"])
    assert cache.vectors(["epsilon"]).tolist() == [[7, 1]]
