"""What the five LLM judges share: the client they call, the prompt, the truncation policy and
the mapping of an ``LLMResult`` onto a ``JudgeResult``.

Contract of every LLM judge: one structured call per item (never one per claim or per chunk),
the output validated against the input by ``validate`` (failing it is a parse failure, with at
most one repair call made by the client), ``LLMError.kind`` mapped onto the ``JudgeStatus`` of
the same name, usage and the model's raw text kept on the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from ragjudge.judges.base import JudgeBase
from ragjudge.llm.types import LLMResult
from ragjudge.prompts import ContextBudget, Prompt, fit_contexts, load_prompt
from ragjudge.schema import (
    JudgeInput,
    JudgeResult,
    JudgeStatus,
    PromptRef,
    TokenUsage,
)

T = TypeVar("T", bound=BaseModel)

VERDICT_SCORE = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}
"""Credit per claim verdict: score = mean credit over the claims."""


class StructuredClient(Protocol):
    """The part of ``ragjudge.llm.LLMClient`` the judges use."""

    async def structured(
        self,
        messages: list[dict[str, str]],
        schema: type[T],
        *,
        prompt: PromptRef,
        tags: dict[str, Any] | None = None,
        validate: Callable[[T], str | None] | None = None,
    ) -> LLMResult[T]: ...


def check_chunk_ids(ids: Sequence[int], n: int, where: str) -> str | None:
    """An error message when a context id is outside 1..n."""
    bad = sorted({i for i in ids if not 1 <= i <= n})
    if bad:
        return f"{where}: context ids {bad} do not exist (valid: 1..{n})"
    return None


class LLMJudge(JudgeBase):
    """Base of the LLM judges. Subclasses set ``name``, ``prompt_name`` and the declarations
    (``requires_reference``, ``needs_answer``, ``needs_contexts``) and implement ``_judge``;
    the shared pre-check runs first (``JudgeBase.judge``)."""

    backend = "llm"
    prompt_name: str = ""

    def __init__(
        self,
        client: StructuredClient | None = None,
        *,
        prompt: str | None = None,
        budget: ContextBudget | None = None,
    ) -> None:
        self._client = client
        self.prompt: Prompt = load_prompt(prompt or self.prompt_name)
        self.version = self.prompt.version
        self.budget = budget or ContextBudget()

    @property
    def client(self) -> StructuredClient:
        if self._client is None:
            from ragjudge.llm import default_client

            self._client = default_client()
        return self._client

    def contexts(self, item: JudgeInput) -> tuple[list[str], dict[str, float]]:
        return fit_contexts(list(item.contexts), self.budget)

    async def ask(
        self,
        item: JudgeInput,
        schema: type[T],
        validate: Callable[[T], str | None],
        **variables: Any,
    ) -> tuple[T | None, JudgeResult | None, TokenUsage, str | None]:
        """One structured call. Returns (value, failure result or None, usage, raw text)."""
        messages = self.prompt.render(**variables)
        res = await self.client.structured(
            messages,
            schema,
            prompt=self.prompt.ref,
            tags={"judge": self.name, "item": item.id},
            validate=validate,
        )
        raw = res.texts[0] if res.texts else None
        if res.ok and res.value is not None:
            return res.value, None, res.usage, raw
        kind = res.error.kind if res.error is not None else "parse_error"
        message = res.error.message if res.error is not None else "no value returned"
        failure = self.result(
            item, JudgeStatus(kind), usage=res.usage, raw=raw, error=message[:2000]
        )
        return None, failure, res.usage, raw
