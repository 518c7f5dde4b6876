"""Bad endpoints and settings give one clear message naming the cause and the fix."""

from __future__ import annotations

import socket

import pytest
from pydantic import BaseModel

from ragjudge.errors import ConfigError
from ragjudge.llm import LLMClient, LLMSettings
from ragjudge.schema import PromptRef
from ragjudge.testing.server import FakeLLMServer

SUM = PromptRef(name="test/sum", version="v1")


class Sum(BaseModel):
    numbers: list[int]
    total: int


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_unreachable_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    async with LLMClient.from_env(max_attempts=2, backoff_initial=0.01) as client:
        res = await client.chat(ask("x"), prompt=SUM)
    assert res.error is not None and res.error.kind == "provider_error"
    assert "cannot reach" in res.error.message and "OPENAI_BASE_URL" in res.error.message
    assert res.attempts == 2


async def test_unknown_model_fails_fast_after_the_first_404(llm_env: FakeLLMServer) -> None:
    llm_env.models = ["real-model"]
    async with LLMClient.from_env(model="no-such-model") as client:
        first = await client.structured(ask("1"), Sum, prompt=SUM)
        second = await client.structured(ask("2"), Sum, prompt=SUM)
        with pytest.raises(ConfigError, match="404"):  # the listing call is also told why
            await LLMClient.from_env(model="x", base_url=llm_env.base_url + "/nope").list_models()
        models = await client.list_models()
    assert models == ["real-model"]
    for res in (first, second):
        assert res.error is not None and res.error.kind == "provider_error"
        assert "'no-such-model' not found" in res.error.message
        assert "RAGJUDGE_MODEL" in res.error.message
    assert len(llm_env.chat_requests()) == 1  # the second call was not sent


async def test_wrong_key(llm_env: FakeLLMServer) -> None:
    llm_env.api_key = "sk-the-right-one"
    async with LLMClient.from_env() as client:
        res = await client.chat(ask("x"), prompt=SUM)
    assert res.error is not None and "OPENAI_API_KEY" in res.error.message
    assert "sk-test-secret" not in res.error.message and res.attempts == 1


def test_missing_key_for_remote_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://llm.example.com/v1")
    assert LLMSettings.configured()
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        LLMClient.from_env()


def test_local_endpoint_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    assert LLMClient.from_env(cache=False).endpoint == "http://localhost:11434/v1"


def test_not_configured_and_bad_values(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not LLMSettings.configured()
    monkeypatch.setenv("RAGJUDGE_MAX_CONCURRENCY", "lots")
    with pytest.raises(ConfigError, match="RAGJUDGE_MAX_CONCURRENCY"):
        LLMSettings.from_env()
    monkeypatch.setenv("RAGJUDGE_MAX_CONCURRENCY", "3")
    monkeypatch.setenv("RAGJUDGE_MODEL", "m")
    monkeypatch.setenv("RAGJUDGE_TEMPERATURE", "0.5")
    s = LLMSettings.from_env(model="override")
    assert (s.max_concurrency, s.model, s.temperature) == (3, "override", 0.5)


async def test_context_window_checked_before_sending(llm_env: FakeLLMServer) -> None:
    async with LLMClient.from_env(context_window=100, max_tokens=50) as client:
        res = await client.chat(ask("word " * 200), prompt=SUM)
    assert res.error is not None and res.error.kind == "context_too_long"
    assert "nothing was sent" in res.error.message and llm_env.chat_requests() == []


async def test_context_window_reported_by_endpoint(llm_env: FakeLLMServer) -> None:
    llm_env.context_window = 50
    async with LLMClient.from_env() as client:
        res = await client.chat(ask("word " * 400), prompt=SUM)
    assert res.error is not None and res.error.kind == "context_too_long"
    assert "smaller k" in res.error.message and res.attempts == 1


async def test_forced_format_the_endpoint_rejects(llm_env: FakeLLMServer) -> None:
    llm_env.reject_json_schema = True
    async with LLMClient.from_env(structured_mode="json_schema") as client:
        res = await client.structured(ask("1"), Sum, prompt=SUM)
    assert res.error is not None and "RAGJUDGE_STRUCTURED" in res.error.message


async def test_unknown_template_is_named(llm_env: FakeLLMServer) -> None:
    async with LLMClient.from_env() as client:
        res = await client.chat(ask("x"), prompt=PromptRef(name="judges/nope", version="v9"))
    assert res.error is not None and "judges/nope@v9" in res.error.message
