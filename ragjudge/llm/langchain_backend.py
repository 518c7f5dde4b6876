"""Any LangChain chat model (``langchain_core`` ``BaseChatModel``) as the backend of an
``LLMClient``: same ``chat`` / ``structured`` methods, cache, retries, ledger.

Structured output is prompt-only (the schema goes into the system message; the reply is
validated strictly and repaired at most once). Sampling parameters are configured on the
LangChain model itself; the client's values still enter the cache key. Token counts come
from ``AIMessage.usage_metadata`` where the model reports them, else the offline estimate.
Exceptions whose class names mark them as transient (rate limits, timeouts, connection and
server errors) are retried; any other exception is a non-retryable ``provider_error``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ragjudge.llm.backend import BackendError, Completion
from ragjudge.llm.settings import error_text
from ragjudge.llm.types import ErrorKind

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

_TRANSIENT = ("ratelimit", "timeout", "connection", "unavailable", "internalserver", "overload")


def model_name(model: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def to_langchain(messages: list[dict[str, Any]]) -> list[BaseMessage]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    out: list[BaseMessage] = []
    for m in messages:
        cls = kinds.get(str(m.get("role")))
        if cls is None:
            raise BackendError("provider_error", f"unsupported message role {m.get('role')!r}")
        out.append(cls(content=m.get("content") or ""))
    return out


class LangChainBackend:
    """Sends requests to a LangChain chat model (``n`` choices = ``n`` invocations)."""

    def __init__(self, chat_model: BaseChatModel, *, name: str | None = None) -> None:
        self.chat_model = chat_model
        self.model = name or model_name(chat_model)
        self.endpoint = f"langchain:{type(chat_model).__name__}:{self.model}"

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        sampling: dict[str, Any],
        fields: dict[str, Any] | None,
        headers: dict[str, str],
        timeout: float,
    ) -> Completion:
        del fields, headers
        lc_messages = to_langchain(messages)
        stop = sampling.get("stop")
        texts: list[str] = []
        prompt_tokens: int | None = 0
        completion_tokens: int | None = 0
        for _ in range(int(sampling.get("n") or 1)):
            try:
                reply = await asyncio.wait_for(
                    self.chat_model.ainvoke(lc_messages, stop=stop), timeout
                )
            except TimeoutError:
                raise BackendError(
                    "timeout", f"{self.endpoint}: no answer within {timeout:g} s", retryable=True
                ) from None
            except BackendError:
                raise
            except Exception as exc:
                name = type(exc).__name__.lower()
                transient = any(t in name for t in _TRANSIENT)
                kind: ErrorKind = "rate_limited" if "ratelimit" in name else "provider_error"
                raise BackendError(
                    kind,
                    f"{self.endpoint}: {error_text(exc)}",
                    retryable=transient,
                    overloaded=kind == "rate_limited",
                ) from None
            content = reply.content
            texts.append(
                content
                if isinstance(content, str)
                else "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
            )
            usage = getattr(reply, "usage_metadata", None)
            if usage and prompt_tokens is not None and completion_tokens is not None:
                prompt_tokens += int(usage.get("input_tokens", 0))
                completion_tokens += int(usage.get("output_tokens", 0))
            else:
                prompt_tokens = completion_tokens = None
        return Completion(
            texts=texts,
            finish_reasons=["stop"] * len(texts),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            model=self.model,
        )

    async def aclose(self) -> None:
        return None
