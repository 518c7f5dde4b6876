"""A LangChain chat model as the backend (langchain_core's fake chat models, no HTTP)."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage
from pydantic import BaseModel

from ragjudge.llm import LLMClient
from ragjudge.schema import PromptRef

P = PromptRef(name="any", version="v1")


class Verdict(BaseModel):
    verdict: str
    score: int


async def test_chat_and_n_choices() -> None:
    model = FakeListChatModel(responses=["one", "two", "three"])
    client = LLMClient.from_langchain(model, cache=False)
    res = await client.chat([{"role": "user", "content": "hi"}], prompt=P)
    assert res.ok and res.value == "one" and res.usage.estimated
    more = await client.chat([{"role": "user", "content": "hi"}], prompt=P, n=2)
    assert more.texts == ["two", "three"]
    assert client.ledger.total().calls == 2


async def test_structured_with_repair_and_cache() -> None:
    replies = iter(
        [
            AIMessage(content='```json\n{"verdict": "yes", "score": "high"}\n```'),
            AIMessage(
                content='{"verdict": "yes", "score": 3}',
                usage_metadata={"input_tokens": 40, "output_tokens": 9, "total_tokens": 49},
            ),
        ]
    )
    model = GenericFakeChatModel(messages=replies)
    client = LLMClient.from_langchain(model)
    msgs = [{"role": "system", "content": "Judge."}, {"role": "user", "content": "Is it?"}]
    res = await client.structured(msgs, Verdict, prompt=P)
    assert res.ok and res.value == Verdict(verdict="yes", score=3)
    assert res.meta["repaired"] and res.meta["mode"] == "prompt" and res.usage.calls == 2
    again = await client.structured(msgs, Verdict, prompt=P)  # the fake has no replies left
    assert again.cached and again.value == res.value


async def test_model_exception_is_typed() -> None:
    class Broken(FakeListChatModel):
        async def ainvoke(self, *args: object, **kwargs: object) -> AIMessage:  # type: ignore[override]
            raise ValueError("bad config")

    client = LLMClient.from_langchain(Broken(responses=["x"]), cache=False)
    res = await client.chat([{"role": "user", "content": "hi"}], prompt=P)
    assert res.error is not None and res.error.kind == "provider_error"
    assert "bad config" in res.error.message and res.attempts == 1
