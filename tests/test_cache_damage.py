"""A cache is disposable (issue 30 §4, §7): a damaged entry of the LLM cache or of the offline
judges' embedding cache is dropped, recomputed and counted, with one warning naming the file;
it never blocks a run. A home the judges cannot write runs them without the disk cache and says
so once."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ragjudge.io.diagnostics import DataWarning
from ragjudge.judges.offline.embed import EmbeddingCache
from ragjudge.llm import LLMClient
from ragjudge.schema import PromptRef
from ragjudge.testing.server import FakeLLMServer
from tests.test_offline_embed_cache import CountingEncoder

ECHO = PromptRef(name="test/echo", version="v1")
DAMAGE = [
    "texts = '[\"cut off'",  # a truncated JSON value
    "texts = '{\"a\": 1}'",  # JSON, but not the list of texts
    "texts = '[]'",  # no text at all
    "prompt_tokens = 'many'",  # a text in a count column
]


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.mark.parametrize("damage", DAMAGE)
async def test_a_damaged_row_of_the_llm_cache_is_dropped_recomputed_and_named(
    llm_env: FakeLLMServer, tmp_path, damage
) -> None:
    path = tmp_path / "cache.sqlite"
    async with LLMClient.from_env(cache=path) as client:
        first = await client.chat(ask("hello"), prompt=ECHO)
        await client.chat(ask("other"), prompt=ECHO)
    assert first.ok and not first.cached
    con = sqlite3.connect(path)
    con.execute(f"UPDATE llm_cache SET {damage}")  # every row
    con.commit()
    con.close()
    llm_env.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with LLMClient.from_env(cache=path) as client:
            again = await client.chat(ask("hello"), prompt=ECHO)
            other = await client.chat(ask("other"), prompt=ECHO)
            assert client.cache is not None and getattr(client.cache, "dropped", None) == 2
    assert again.ok and again.value == "hello" and not again.cached
    assert other.ok and other.value == "other"
    assert len(llm_env.chat_requests()) == 2  # both recomputed
    said = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert len(said) == 1 and str(path) in said[0] and "dropped" in said[0], said
    llm_env.reset()
    async with LLMClient.from_env(cache=path) as client:  # the rows were written again
        third = await client.chat(ask("hello"), prompt=ECHO)
    assert third.cached and llm_env.chat_requests() == []


@pytest.mark.parametrize("damage", ["nan", "short"])
def test_a_damaged_vector_in_the_embedding_cache_is_dropped_recomputed_and_named(damage):
    texts = ["The light was first lit in 1811.", "Bees dance."]
    first = EmbeddingCache(CountingEncoder(), persist=True)
    good = first.vectors(texts)
    path = first._disk.path
    con = sqlite3.connect(path)
    data = np.full(8, np.nan, np.float32).tobytes() if damage == "nan" else b"\x00\x01"
    con.execute("UPDATE vec SET data = ?", (data,))
    con.commit()
    con.close()
    enc = CountingEncoder()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = EmbeddingCache(enc, persist=True)
        out = again.vectors(texts)
    assert np.array_equal(out, good) and np.isfinite(out).all()
    assert sorted(enc.seen) == sorted(texts) and again._disk.dropped == 2
    said = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert len(said) == 1 and str(path) in said[0] and "dropped" in said[0], said
    enc = CountingEncoder()
    EmbeddingCache(enc, persist=True).vectors(texts)  # written again: nothing to encode
    assert enc.seen == []


def mount_tmpfs(where: Path, options: str) -> None:
    """Mount a tmpfs with ``options`` on ``where`` (skip the test where this process cannot
    mount); the caller unmounts it."""
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@pytest.fixture
def read_only_home(tmp_path, monkeypatch) -> Iterator[Path]:
    """A RAGJUDGE_HOME nobody can write: a folder without write permission, or, for root
    (whom permissions do not stop), an empty tmpfs mounted read-only (skipped where this
    process cannot mount)."""
    home = tmp_path / "ro-home"
    home.mkdir()
    mounted = False
    if os.geteuid() == 0:
        mount_tmpfs(home, "ro,size=64k")
        mounted = True
    else:
        home.chmod(0o555)
    monkeypatch.setenv("RAGJUDGE_HOME", str(home))
    try:
        yield home
    finally:
        if mounted:
            subprocess.run(["umount", str(home)], check=True)
        else:
            home.chmod(0o755)


def test_a_read_only_home_runs_the_judges_without_the_disk_cache_and_says_so_once(
    read_only_home,
):
    with pytest.raises(OSError):  # really read-only
        (read_only_home / "probe").write_text("x")
    enc = CountingEncoder()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache = EmbeddingCache(enc, persist=True)
        first = cache.vectors(["Bees dance.", "The light was first lit in 1811."])
        second = cache.vectors(["A new sentence."])
    assert first.shape == (2, 8) and second.shape == (1, 8) and np.isfinite(first).all()
    assert enc.seen == ["Bees dance.", "The light was first lit in 1811.", "A new sentence."]
    said = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert len(said) == 1, said
    assert str(read_only_home) in said[0] and "without the disk cache" in said[0]
