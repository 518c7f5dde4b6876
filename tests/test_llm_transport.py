"""The aiohttp transport under the SDK (``ragjudge.llm.transport``): failures classified as
with httpx's own transport, and a client nobody closed leaves no warning behind."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ragjudge.llm import LLMClient
from ragjudge.schema import PromptRef
from ragjudge.testing.faults import FaultPlan
from ragjudge.testing.server import FakeLLMServer

P = PromptRef(name="test/echo", version="v1")


async def test_a_dropped_connection_is_a_lost_connection_not_a_timeout(
    llm_env: FakeLLMServer,
) -> None:
    llm_env.set_faults(FaultPlan(rates={"drop": 1.0}))
    async with LLMClient.from_env(max_attempts=2) as client:
        res = await client.chat([{"role": "user", "content": "x"}], prompt=P)
    assert res.error is not None and res.error.kind == "provider_error"
    assert "cannot reach the LLM endpoint" in res.error.message
    assert "RemoteProtocolError" in res.error.message
    assert [a.error_kind for a in client.ledger.attempts()] == ["provider_error"] * 2


def test_a_client_nobody_closed_is_closed_with_its_loop(fake_llm: FakeLLMServer) -> None:
    code = textwrap.dedent(
        f"""
        import asyncio, gc
        from ragjudge.llm import LLMClient
        from ragjudge.schema import PromptRef

        async def main():
            client = LLMClient.from_env(base_url="{fake_llm.base_url}", api_key="sk-x",
                                        model="m", cache=False)
            res = await client.chat([{{"role": "user", "content": "hi"}}],
                                    prompt=PromptRef(name="t", version="v1"))
            assert res.error is None or "400" in res.error.message, res.error
            return client

        kept = asyncio.run(main())
        gc.collect()
        print("done")
        """
    )
    env = dict(os.environ, PYTHONWARNINGS="always::ResourceWarning")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0 and "done" in out.stdout, out.stderr
    assert "Unclosed" not in out.stderr and "unclosed" not in out.stderr, out.stderr


def test_one_client_serves_two_event_loops_at_once(fake_llm: FakeLLMServer) -> None:
    fake_llm.latency = 0.05
    client = LLMClient.from_env(
        base_url=fake_llm.base_url, api_key="sk-x", model="m", cache=False, max_attempts=1
    )

    async def calls(tag: str) -> list[bool]:
        msgs = [[{"role": "user", "content": f"{tag} {i}"}] for i in range(20)]
        got = await asyncio.gather(*(client.chat(m, prompt=P) for m in msgs))
        return [r.error is None or "400" in r.error.message for r in got]

    with ThreadPoolExecutor(max_workers=2) as pool:
        answered = list(pool.map(lambda tag: asyncio.run(calls(tag)), ["a", "b"]))
    assert answered == [[True] * 20, [True] * 20]
    assert len(fake_llm.chat_requests()) == 40


async def test_the_proxy_of_the_environment_is_used(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HTTP(S)_PROXY`` reaches the transport as with httpx's own (a team behind a proxy):
    the endpoint's host does not resolve, so only the proxy (the scripted server, which
    serves the absolute-form request it is sent) can answer."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", fake_llm.base_url.rsplit("/v1", 1)[0])
    before = len(fake_llm.chat_requests())
    async with LLMClient.from_env(
        base_url="http://llm.invalid/v1", api_key="sk-x", model="m", cache=False, max_attempts=1
    ) as client:
        res = await client.chat([{"role": "user", "content": "hi"}], prompt=P)
    assert len(fake_llm.chat_requests()) == before + 1, res.error


async def test_a_netrc_entry_for_the_host_does_not_break_the_calls(
    fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """httpx does not read ``~/.netrc``; aiohttp's ``trust_env`` read it on every request (a
    worker-thread hop each) and turned an entry for the endpoint's host into auth beside the
    SDK's ``Authorization`` header, which it refuses: every call failed."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password hunter2\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    async with LLMClient.from_env(
        base_url=fake_llm.base_url, api_key="sk-x", model="m", cache=False, max_attempts=1
    ) as client:
        res = await client.chat([{"role": "user", "content": "hi"}], prompt=P)
    assert res.error is None or "400" in res.error.message, res.error
    assert fake_llm.chat_requests()[-1]["body"]["messages"][0]["content"] == "hi"


async def test_a_cookie_the_endpoint_sets_is_kept_and_sent_back_once() -> None:
    """A load balancer's sticky-session cookie through the aiohttp transport: kept from the
    response that sets it and sent once on every later request."""
    from aiohttp import web
    from aiohttp.test_utils import TestServer

    seen: list[list[str]] = []

    async def chat(request: web.Request) -> web.Response:
        seen.append(request.headers.getall("Cookie", []))
        reply = web.json_response(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )
        if len(seen) == 2:
            reply.set_cookie("lb", "node-1")
        return reply

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    async with (
        TestServer(app, host="127.0.0.1") as server,
        LLMClient.from_env(
            base_url=str(server.make_url("/v1")),
            api_key="sk-x",
            model="m",
            cache=False,
            max_attempts=1,
        ) as client,
    ):
        for text in ("a", "b", "c", "d"):
            res = await client.chat([{"role": "user", "content": text}], prompt=P)
            assert res.error is None, res.error
    assert seen == [[], [], ["lb=node-1"], ["lb=node-1"]]
