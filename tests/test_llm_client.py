"""The LLM client over real HTTP against the local test server: chat, structured output,
repair, fallbacks, cache, ledger, secrets."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from ragjudge.llm import LLMClient, LLMSettings
from ragjudge.schema import PromptRef
from ragjudge.testing.faults import FaultPlan
from ragjudge.testing.server import FakeLLMServer
from tests.fixtures.llm import TEST_KEY

SUM = PromptRef(name="test/sum", version="v1")
ECHO = PromptRef(name="test/echo", version="v1")


class Sum(BaseModel):
    numbers: list[int]
    total: int


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Add the numbers."}, {"role": "user", "content": text}]


async def test_chat_returns_text_with_template_header_and_usage(llm_env: FakeLLMServer) -> None:
    async with LLMClient.from_env() as client:
        res = await client.chat(ask("hello there"), prompt=ECHO, tags={"k": 3})
    assert res.ok and res.value == "hello there" and res.texts == ["hello there"]
    assert res.usage.prompt_tokens > 0 and res.usage.completion_tokens > 0
    assert not res.usage.estimated
    (req,) = llm_env.chat_requests()
    assert req["template"] == "test/echo@v1"
    assert req["body"]["model"] == "fake-model"
    assert client.ledger.calls()[0].tags == {"k": "3"}


async def test_chat_n_choices(llm_env: FakeLLMServer) -> None:
    async with LLMClient.from_env() as client:
        res = await client.chat(ask("abc"), prompt=ECHO, n=3)
    assert res.texts == ["abc", "abc", "abc"]
    assert llm_env.chat_requests()[0]["body"]["n"] == 3


async def test_structured_json_schema(llm_env: FakeLLMServer) -> None:
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("2 and 40"), Sum, prompt=SUM)
    assert res.ok and res.value == Sum(numbers=[2, 40], total=42)
    body = llm_env.chat_requests()[0]["body"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["title"] == "Sum"
    assert res.meta["mode"] == "json_schema" and res.attempts == 1


async def test_rerun_is_served_from_cache_with_zero_requests(llm_env: FakeLLMServer) -> None:
    async with LLMClient.from_env() as client:
        first = [await client.structured(ask(f"{i} 1"), Sum, prompt=SUM) for i in range(5)]
    assert len(llm_env.chat_requests()) == 5
    llm_env.reset()
    async with LLMClient.from_env() as again:  # a new process would open the same file
        second = [await again.structured(ask(f"{i} 1"), Sum, prompt=SUM) for i in range(5)]
        chat = await again.chat(ask("x"), prompt=ECHO)
    assert llm_env.chat_requests()[0]["template"] == "test/echo@v1"
    assert len(llm_env.chat_requests()) == 1  # only the new chat call went out
    assert [r.value for r in second] == [r.value for r in first]
    assert all(r.cached for r in second) and chat.ok and not chat.cached
    assert again.ledger.total().cached_calls == 5 and again.ledger.total().calls == 1


async def test_calls_wait_for_another_process_holding_the_cache_without_stalling_the_loop(
    llm_env: FakeLLMServer, tmp_path: Path
) -> None:
    """A reply is committed to the cache before its call returns. While another process holds
    the cache file's write lock the commit waits in a worker thread, not on the event loop:
    other work goes on, and the calls return, stored, once the lock is let go."""
    path = tmp_path / "cache.sqlite"
    async with LLMClient.from_env(cache=path) as client:
        await client.structured(ask("1 1"), Sum, prompt=SUM)  # the file exists, its table too
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        calls = asyncio.gather(
            *(client.structured(ask(f"{i} 2"), Sum, prompt=SUM) for i in range(3))
        )
        ticks = 0
        started = time.perf_counter()
        while time.perf_counter() - started < 0.6:
            await asyncio.sleep(0.01)
            ticks += 1
        assert not calls.done()  # waiting for the commit, as they must
        assert ticks >= 20  # the loop kept turning meanwhile
        other.execute("COMMIT")
        other.close()
        results = await asyncio.wait_for(calls, 10)
    assert all(r.ok and not r.cached for r in results)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0] == 4


async def test_cache_key_separates_prompt_version_and_sampling(llm_env: FakeLLMServer) -> None:
    async with LLMClient.from_env() as client:
        await client.structured(ask("1 2"), Sum, prompt=SUM)
        await client.structured(ask("1 2"), Sum, prompt=PromptRef(name="test/sum", version="v2"))
        await client.structured(ask("1 2"), Sum, prompt=SUM, temperature=0.7)
        await client.structured(ask("1 2"), Sum, prompt=SUM)
    assert len(llm_env.chat_requests()) == 3


async def test_malformed_reply_gets_one_repair_call(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan.sequence(["malformed"]))
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("3 4"), Sum, prompt=SUM)
    assert res.ok and res.value == Sum(numbers=[3, 4], total=7)
    assert res.meta["repaired"] and res.usage.calls == 2 and res.attempts == 2
    reqs = llm_env.chat_requests()
    assert len(reqs) == 2
    repair = reqs[1]["body"]["messages"]
    assert repair[-2]["role"] == "assistant" and "not valid JSON" in repair[-1]["content"]
    (call,) = client.ledger.calls()
    assert call.repair and call.attempts == 2


async def test_persistent_malformed_is_one_repair_then_a_parse_error(
    llm_env: FakeLLMServer,
) -> None:
    llm_env.set_faults(FaultPlan(rates={"malformed": 1.0}))
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("3 4"), Sum, prompt=SUM)
    assert not res.ok and res.error is not None and res.error.kind == "parse_error"
    assert "one repair call" in res.error.message
    # the call and ONE repair call quoting the problem; never an identical re-send
    reqs = llm_env.chat_requests()
    assert len(reqs) == 2 and res.attempts == 2
    assert reqs[0]["body"] != reqs[1]["body"]
    assert "not valid JSON" in reqs[1]["body"]["messages"][-1]["content"]
    (call,) = client.ledger.calls()
    assert call.repair and call.attempts == 2


async def test_parse_failures_in_a_row_drop_the_mode(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan(script={i: "malformed" for i in range(6)}))
    async with LLMClient.from_env() as client:
        for i in range(3):
            assert not (await client.structured(ask(f"{i} 1"), Sum, prompt=SUM)).ok
        assert client.structured_mode() == "json_object"
        res = await client.structured(ask("2 2"), Sum, prompt=SUM)
    assert res.ok and res.meta["mode"] == "json_object"
    fmt = llm_env.chat_requests()[-1]["body"]["response_format"]
    assert fmt["type"] == "json_object" and fmt["schema"]["properties"]["total"]


async def test_validate_hook_failure_triggers_repair(llm_env: FakeLLMServer) -> None:
    seen: list[int] = []

    def validate(v: Sum) -> str | None:
        seen.append(v.total)
        return "total must be even" if len(seen) == 1 else None

    async with LLMClient.from_env() as client:
        res = await client.structured(ask("1 2"), Sum, prompt=SUM, validate=validate)
    assert res.ok and seen == [3, 3] and res.meta["repaired"]
    assert "total must be even" in llm_env.chat_requests()[1]["body"]["messages"][-1]["content"]


async def test_truncated_reply_names_max_tokens(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan(rates={"truncated": 1.0}))
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("1 2"), Sum, prompt=SUM)
    assert res.error is not None and res.error.kind == "parse_error"
    assert "RAGJUDGE_MAX_TOKENS" in res.error.message


async def test_refusal_is_typed(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan(rates={"refuse": 1.0}))
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("1 2"), Sum, prompt=SUM)
    assert res.error is not None and res.error.kind == "refused"


async def test_json_schema_rejected_falls_back_once_per_endpoint(llm_env: FakeLLMServer) -> None:
    llm_env.reject_json_schema = True
    async with LLMClient.from_env() as client:
        a = await client.structured(ask("5 5"), Sum, prompt=SUM)
        b = await client.structured(ask("6 6"), Sum, prompt=SUM)
    assert a.ok and b.ok and a.value is not None and a.value.total == 10
    kinds = [(r["body"].get("response_format") or {}).get("type") for r in llm_env.chat_requests()]
    assert kinds == ["json_schema", "json_object", "json_object"]
    system = llm_env.chat_requests()[1]["body"]["messages"][0]["content"]
    assert "JSON schema" in system and '"total"' in system


async def test_both_formats_rejected_falls_back_to_a_forced_tool_call(
    llm_env: FakeLLMServer,
) -> None:
    llm_env.reject_json_schema = llm_env.reject_json_object = True
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("1 1"), Sum, prompt=SUM)
    assert res.ok and res.meta["mode"] == "tools" and res.value == Sum(numbers=[1, 1], total=2)
    body = llm_env.chat_requests()[-1]["body"]
    assert body["tool_choice"]["function"]["name"] == "Sum"
    assert body["tools"][0]["function"]["parameters"] == Sum.model_json_schema()


async def test_every_mode_rejected_falls_back_to_prompt_only(llm_env: FakeLLMServer) -> None:
    llm_env.reject_json_schema = llm_env.reject_json_object = llm_env.reject_tools = True
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("1 1"), Sum, prompt=SUM)
    assert res.ok and res.meta["mode"] == "prompt"
    last = llm_env.chat_requests()[-1]["body"]
    assert "response_format" not in last and "tools" not in last


async def test_llama_cpp_500_on_json_schema_falls_back_and_is_remembered(
    llm_env: FakeLLMServer,
) -> None:
    import json

    from ragjudge.home import state_path

    llm_env.like_llama_cpp = True
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("2 3"), Sum, prompt=SUM)
    assert res.ok and res.meta["mode"] == "json_object" and res.attempts == 3
    assert client.ledger.calls()[-1].mode == "json_object"  # recorded with the run's ledger
    kinds = [r["body"]["response_format"]["type"] for r in llm_env.chat_requests()]
    assert kinds == ["json_schema", "json_schema", "json_object"]
    saved = json.loads(state_path("llm_modes.json").read_text())
    (rec,) = saved.values()
    assert rec["mode"] == "json_object"
    why = rec["dropped"]["json_schema"]
    assert "Input should be 'text' or 'json_object'" in why and "Traceback" not in why
    assert "\n" not in why and "File " not in why
    # a new client (a later run) starts with the mode that worked
    llm_env.reset()
    async with LLMClient.from_env() as client:
        assert client.structured_mode() == "json_object"
        assert (await client.structured(ask("4 4"), Sum, prompt=SUM)).ok
    assert [r["body"]["response_format"]["type"] for r in llm_env.chat_requests()] == [
        "json_object"
    ]


async def test_modes_are_walked_forward_once_and_dropped_when_a_later_one_works(
    llm_env: FakeLLMServer,
) -> None:
    """json_schema answered 500 and json_object 400: the walk goes on to tools (it used to
    loop between the two for ever, thousands of requests a minute), drops both, and a later
    client starts at tools."""
    import asyncio

    llm_env.like_llama_cpp = llm_env.reject_json_object = True
    async with LLMClient.from_env() as client:
        res = await asyncio.wait_for(client.structured(ask("2 3"), Sum, prompt=SUM), 30)
        assert res.ok and res.meta["mode"] == "tools"
        assert client.structured_mode() == "tools"
    assert len(llm_env.chat_requests()) <= 4  # json_schema x2, json_object, tools


async def test_a_refusal_every_mode_gets_is_not_about_the_mode(llm_env: FakeLLMServer) -> None:
    """A 400 that prompt-only gets too (here: a template the server has no responder for)
    drops no mode: it used to drop every constrained one for good after one bad request."""
    from ragjudge.llm import modes

    unknown = PromptRef(name="test/no-such-template", version="v1")
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("2 3"), Sum, prompt=unknown)
        assert not res.ok and client.structured_mode() == "json_schema"
        assert modes.memory().get(client.mode_key).dropped == {}
    assert len(llm_env.chat_requests()) == 4  # each mode once, none twice


async def test_a_server_failing_every_request_drops_no_mode(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan(rates={"500": 1.0}))
    async with LLMClient.from_env(max_attempts=3) as client:
        res = await client.structured(ask("2 3"), Sum, prompt=SUM)
        assert client.structured_mode() == "json_schema"
    assert res.error is not None and res.error.kind == "provider_error"
    # two tries per structured mode, then the full attempts for the plain request
    assert res.attempts == 2 + 2 + 2 + 3


async def test_missing_usage_is_estimated(llm_env: FakeLLMServer) -> None:
    llm_env.omit_usage = True
    async with LLMClient.from_env() as client:
        res = await client.chat(ask("some words here"), prompt=ECHO)
    assert res.usage.estimated and res.usage.prompt_tokens > 0
    assert client.ledger.total().estimated


def test_secret_never_reaches_cache_ledger_or_log(
    llm_env: FakeLLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio
    import logging

    caplog.set_level(logging.DEBUG)
    settings = LLMSettings.from_env()
    assert TEST_KEY not in repr(settings) and TEST_KEY not in str(settings.safe_dict())

    async def run() -> LLMClient:
        async with LLMClient(settings) as client:
            await client.structured(ask("1 2"), Sum, prompt=SUM)
            await client.chat(ask("hi"), prompt=ECHO)
        return client

    client = asyncio.run(run())
    assert client.cache is not None
    ledger_file = tmp_path / "ledger.jsonl"
    client.ledger.to_jsonl(ledger_file)
    for path in client.cache.path.parent.glob("cache.sqlite*"):
        assert TEST_KEY.encode() not in path.read_bytes(), path
    assert len(client.cache) == 2
    assert TEST_KEY not in ledger_file.read_text()
    assert TEST_KEY not in caplog.text
