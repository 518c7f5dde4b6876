"""Types of the LLM layer that its callers (judges, generators, rerankers) depend on.

A call never raises for a provider failure: it returns an ``LLMResult`` whose ``error`` names
the failure kind. Callers map ``error.kind`` onto their own typed status
(``JudgeStatus`` values use the same names).
"""

from __future__ import annotations

from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ragjudge.schema import PromptRef, TokenUsage

ErrorKind = Literal[
    "rate_limited", "timeout", "provider_error", "parse_error", "refused", "context_too_long"
]

T = TypeVar("T")


class LLMError(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: ErrorKind
    message: str


class LLMResult(BaseModel, Generic[T]):
    """Outcome of one logical call (all its attempts and at most one repair call)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    value: T | None = None
    """The validated object (structured calls) or the text (plain chat calls)."""
    texts: list[str] = Field(default_factory=list)
    """Every returned choice's raw text (``n`` > 1 gives several)."""
    error: LLMError | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    attempts: int = 0
    cached: bool = False
    model: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and self.value is not None


PREFLIGHT = "ragjudge/preflight@v1"
"""Template label of the pre-flight call (``LLMClient.preflight``)."""

TEMPLATE_HEADER = "X-Ragjudge-Template"
"""HTTP header carrying ``name@version`` of the prompt template; endpoints ignore it, the local
test server uses it to choose a scripted responder."""


class ChatClient(Protocol):
    """The part of ``ragjudge.llm.LLMClient`` the chat generator and the ragas adapter use."""

    async def chat(
        self,
        messages: list[dict[str, str]],
        *,
        prompt: PromptRef,
        tags: dict[str, Any] | None = None,
        n: int = 1,
        **sampling: Any,
    ) -> LLMResult[str]: ...
