"""Offline token estimates and the dry run of a planned set of calls.

``estimate_tokens``: ``ceil(chars / 4)`` per message content plus 3 tokens per message and 3
for the reply primer (OpenAI's chat accounting), a deliberately simple, tokenizer-free
estimate (within ~15% of o200k on English prose).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ragjudge.llm.ledger import PriceTable

PER_MESSAGE = 3
REPLY_PRIMER = 3


def text_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def estimate_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """Estimated prompt tokens of chat ``messages``."""
    return REPLY_PRIMER + sum(
        PER_MESSAGE + text_tokens(content_text(m.get("content"))) for m in messages
    )


class DryRunEstimate(BaseModel):
    """What a planned run would send, before anything is sent."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    model: str
    priced: bool
    """False when the model is not in the price table (cost shown as 0)."""
    max_prompt_tokens: int = 0
    over_context: int = 0
    """Planned calls whose prompt plus completion budget exceeds ``context_window``."""


def dry_run(
    planned: Sequence[Sequence[dict[str, Any]]],
    price_table: PriceTable | None = None,
    *,
    model: str = "gpt-4o-mini",
    completion_tokens: int = 256,
    n: int = 1,
    context_window: int | None = None,
) -> DryRunEstimate:
    """Tokens and cost of sending every message list in ``planned`` once, assuming
    ``completion_tokens`` per choice and ``n`` choices per call."""
    prices = price_table or PriceTable()
    sizes = [estimate_tokens(m) for m in planned]
    prompt = sum(sizes)
    completion = len(sizes) * completion_tokens * n
    over = 0
    if context_window is not None:
        over = sum(1 for s in sizes if s + completion_tokens > context_window)
    return DryRunEstimate(
        calls=len(sizes),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=prices.cost(model, prompt, completion),
        model=model,
        priced=prices.price(model) is not None,
        max_prompt_tokens=max(sizes, default=0),
        over_context=over,
    )
