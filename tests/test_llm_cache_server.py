"""The LLM cache in a team's PostgreSQL (``RAGJUDGE_LLM_CACHE_URL``): two processes on separate
homes pay once for the same call, a damaged row is dropped, recomputed and named once (database
and table, password hidden), and no secret reaches the table. A real server (tests/fixtures/
postgres.py) and the scripted endpoint over HTTP (``FakeLLMServer``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from ragjudge.errors import ConfigError
from ragjudge.llm.opencache import open_cache
from ragjudge.testing.server import FakeLLMServer
from tests.fixtures.llm import TEST_KEY, TEST_MODEL
from tests.fixtures.postgres import PASSWORD

ROOT = Path(__file__).resolve().parent.parent

CALL = """
import asyncio, json, warnings
from ragjudge.llm import LLMClient
from ragjudge.schema import PromptRef

async def main():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with LLMClient.from_env() as client:
            res = await client.chat([{"role": "user", "content": "hello"}],
                                    prompt=PromptRef(name="test/echo", version="v1"))
            dropped = getattr(client.cache, "dropped", None)
    print(json.dumps({"value": res.value, "cached": res.cached, "dropped": dropped,
                      "warnings": [str(w.message) for w in caught]}))

asyncio.run(main())
"""


def call_in_a_process(server: FakeLLMServer, cache_url: str, home: Path) -> dict:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "RAGJUDGE_HOME": str(home),
        "RAGJUDGE_LLM_CACHE_URL": cache_url,
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": TEST_KEY,
        "RAGJUDGE_MODEL": TEST_MODEL,
    }
    done = subprocess.run(
        [sys.executable, "-c", CALL], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_two_processes_share_the_cache_in_postgres(postgres, fake_llm, tmp_path):
    url = postgres.fresh_url()
    first = call_in_a_process(fake_llm, url, tmp_path / "laptop")
    assert first["value"] == "hello" and not first["cached"]
    assert len(fake_llm.chat_requests()) == 1
    second = call_in_a_process(fake_llm, url, tmp_path / "ci")  # another home: not the file
    assert second["value"] == "hello" and second["cached"]
    assert len(fake_llm.chat_requests()) == 1  # the second process paid nothing
    assert not (tmp_path / "ci" / "cache.sqlite").exists()

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        rows = [dict(r._mapping) for r in conn.execute(sa.text("SELECT * FROM llm_cache"))]
        assert len(rows) == 1 and json.loads(rows[0]["texts"]) == ["hello"]
        assert TEST_KEY not in json.dumps(rows, default=str)
        assert PASSWORD not in json.dumps(rows, default=str)
        conn.execute(sa.text("UPDATE llm_cache SET texts = '[\"cut off'"))

    fake_llm.reset()
    third = call_in_a_process(fake_llm, url, tmp_path / "laptop")
    assert third["value"] == "hello" and not third["cached"] and third["dropped"] == 1
    assert len(fake_llm.chat_requests()) == 1  # recomputed
    said = [w for w in third["warnings"] if "damaged entry" in w]
    assert len(said) == 1 and "table llm_cache" in said[0] and "***" in said[0], said
    assert PASSWORD not in said[0]
    fake_llm.reset()
    fourth = call_in_a_process(fake_llm, url, tmp_path / "ci")  # the row was written again
    assert fourth["cached"] and fake_llm.chat_requests() == []
    with engine.connect() as conn:
        assert json.loads(conn.execute(sa.text("SELECT texts FROM llm_cache")).scalar_one()) == [
            "hello"
        ]
    engine.dispose()
    from typer.testing import CliRunner

    from ragjudge.cli import app

    # the cache's table beside a run store's: the store opens, migrates and checks clean
    checked = CliRunner().invoke(app, ["store", "check", "--store", url])
    assert checked.exit_code == 0 and "0 problems" in checked.output, checked.output


def test_the_cache_url_is_checked_and_a_file_path_is_the_file_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGJUDGE_LLM_CACHE_URL", "mysql://u:hunter2@db/x")
    with pytest.raises(ConfigError) as err:
        open_cache()
    assert "RAGJUDGE_LLM_CACHE_URL" in str(err.value) and "hunter2" not in str(err.value)
    monkeypatch.setenv("RAGJUDGE_LLM_CACHE_URL", f"sqlite:///{tmp_path / 'team.sqlite'}")
    assert open_cache().location == str(tmp_path / "team.sqlite")


def test_a_bad_database_url_is_one_readable_line(monkeypatch, capsys):
    """The hint survives the printed redaction of URLs (it once read ``postgresql://***@HOST``)."""
    from tests.test_exit_codes import run_cli

    monkeypatch.setenv("RAGJUDGE_LLM_CACHE_URL", "redis://u:hunter2@h/0")
    for args in (["llm", "cache"], ["runs", "list", "--store", "redis://u:hunter2@h/0"]):
        code, text = run_cli(args, capsys)
        line = " ".join(text.split())
        assert code == 2 and "unknown database 'redis'" in line, line
        assert "a postgresql:// URL" in line and len(text.strip().splitlines()) == 1, line
        assert "hunter2" not in line and "***@HOST" not in line, line


async def test_a_lookup_waiting_on_the_database_does_not_stall_the_event_loop(
    postgres, fake_llm, monkeypatch
):
    """While another session holds the cache's table locked (0.8 s), a call's look-up waits
    for the database in a worker thread: the event loop keeps turning, and the call completes
    once the lock is let go."""
    import asyncio
    import threading
    import time

    from ragjudge.llm import LLMClient
    from ragjudge.schema import PromptRef

    url = postgres.fresh_url()
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("RAGJUDGE_MODEL", TEST_MODEL)
    prompt = PromptRef(name="test/echo", version="v1")
    hello = [{"role": "user", "content": "hello"}]
    locked = threading.Event()

    def hold_the_table() -> None:
        engine = sa.create_engine(url)
        with engine.connect() as other:
            other.execute(sa.text("LOCK TABLE llm_cache IN ACCESS EXCLUSIVE MODE"))
            locked.set()
            time.sleep(0.8)
            other.rollback()
        engine.dispose()

    async with LLMClient.from_env(cache=open_cache(url)) as client:
        assert not (await client.chat(hello, prompt=prompt)).cached  # the table exists now
        holder = threading.Thread(target=hold_the_table)
        holder.start()
        assert locked.wait(10)
        call = asyncio.ensure_future(client.chat(hello, prompt=prompt))
        ticks, started = 0, time.perf_counter()
        while time.perf_counter() - started < 0.6:
            await asyncio.sleep(0.01)
            ticks += 1
        assert not call.done()  # the look-up waits for the lock, as it must
        assert ticks >= 20  # and the loop kept turning meanwhile
        res = await asyncio.wait_for(call, 10)
        holder.join()
    assert res.value == "hello" and res.cached
    assert len(fake_llm.chat_requests()) == 1


@pytest.mark.parametrize(
    "url",
    ["postgresql://u:hunter2@127.0.0.1:33303:99999/evals", "postgresql://u:hunter2@[::1/evals"],
)
def test_a_malformed_database_url_is_one_line_naming_it(url, monkeypatch, capsys):
    """A port that is no number (SQLAlchemy raises ``ValueError``, not ``ArgumentError``) is
    a bad URL, redacted, wherever the URL comes from; never an internal error."""
    from tests.test_exit_codes import run_cli

    # the credentials masked: 'u:***@' once the password is a known secret of the process
    # (the user then kept), '***@' before
    shown = url.split("@", 1)[1]
    for env, args, needle in (
        ({}, ["store", "check", "--store", url], f"***@{shown}"),
        ({}, ["ui", "--no-browser", "--store", url], f"***@{shown}"),
        ({"RAGJUDGE_STORE_URL": url}, ["runs", "list"], f"***@{shown}"),
        ({"RAGJUDGE_LLM_CACHE_URL": url}, ["llm", "cache"], "RAGJUDGE_LLM_CACHE_URL: not a"),
    ):
        with monkeypatch.context() as m:
            for name, value in env.items():
                m.setenv(name, value)
            code, text = run_cli(args, capsys)
        line = " ".join(text.split())
        assert code == 2 and needle in line and len(text.strip().splitlines()) == 1, line
        assert "not a run store URL" in line or "RAGJUDGE_LLM_CACHE_URL" in line, line
        assert "internal error" not in line and "hunter2" not in line, line
