"""What the five LLM judges share: the client they call, the prompt, the truncation policy and
the mapping of an ``LLMResult`` onto a ``JudgeResult``.

Contract of every LLM judge: one structured call per item (never one per claim or per chunk),
the output validated against the input by ``validate`` (failing it is a parse failure, with at
most one repair call made by the client), ``LLMError.kind`` mapped onto the ``JudgeStatus`` of
the same name, usage and the model's raw text kept on the result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel

from ragjudge.llm.types import LLMResult
from ragjudge.prompts import ContextBudget, Prompt, fit_contexts, load_prompt
from ragjudge.schema import (
    Evidence,
    JudgeInput,
    JudgeResult,
    JudgeStatus,
    PromptRef,
    TokenUsage,
)

if TYPE_CHECKING:
    from ragjudge.llm import LLMClient

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


def default_client(**overrides: Any) -> LLMClient:
    """The LLM client configured from the environment (``OPENAI_BASE_URL`` etc.),
    ``overrides`` winning."""
    from ragjudge.llm import LLMClient

    return LLMClient.from_env(**overrides)


def judge_clients(count: int, **overrides: Any) -> list[LLMClient]:
    """``count`` clients of the configured endpoint sharing one ledger and one cache.

    Each has its own HTTP connection pool: httpcore scans every pooled connection on each
    request, so one pool of C connections costs O(C) CPU per request, and C/n per pool when
    the judges of a run each use their own (the endpoint's concurrency limit stays shared).
    """
    from ragjudge.llm import Ledger, LLMCache, LLMClient

    ledger, cache = Ledger(), LLMCache()
    return [LLMClient.from_env(ledger=ledger, cache=cache, **overrides) for _ in range(count)]


def check_chunk_ids(ids: Sequence[int], n: int, where: str) -> str | None:
    """An error message when a context id is outside 1..n."""
    bad = sorted({i for i in ids if not 1 <= i <= n})
    if bad:
        return f"{where}: context ids {bad} do not exist (valid: 1..{n})"
    return None


class LLMJudge:
    """Base of the LLM judges. Subclasses set ``name``, ``prompt_name``, ``requires_reference``
    and implement ``_messages`` / ``_call``."""

    name: str = ""
    prompt_name: str = ""
    requires_reference: bool = False
    needs_answer: bool = True
    needs_contexts: bool = True

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
            self._client = default_client()
        return self._client

    # ------------------------------------------------------------------ result helpers

    def result(
        self,
        item: JudgeInput,
        status: JudgeStatus,
        *,
        score: float | None = None,
        evidence: Evidence | None = None,
        usage: TokenUsage | None = None,
        raw: str | None = None,
        error: str | None = None,
    ) -> JudgeResult:
        return JudgeResult(
            judge=self.name,
            judge_version=self.version,
            backend="llm",
            item_id=item.id,
            score=score,
            status=status,
            evidence=evidence or Evidence(),
            usage=usage or TokenUsage(),
            raw=raw,
            error=error,
        )

    def precheck(self, item: JudgeInput) -> JudgeResult | None:
        """A typed result for an item this judge cannot judge, else None."""
        if self.requires_reference and not (item.reference or "").strip():
            return self.result(
                item,
                JudgeStatus.skipped_missing_reference,
                error=f"{self.name} needs a reference answer",
            )
        if self.needs_answer and not item.answer.strip():
            return self.result(item, JudgeStatus.invalid_input, error="empty answer")
        if self.needs_contexts and not item.contexts:
            return self.result(item, JudgeStatus.invalid_input, error="no contexts")
        return None

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

    async def judge(self, item: JudgeInput) -> JudgeResult:
        skip = self.precheck(item)
        if skip is not None:
            return skip
        return await self._judge(item)

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        raise NotImplementedError
