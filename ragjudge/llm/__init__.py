"""The LLM layer: one async client for every OpenAI-compatible endpoint, with retries,
adaptive concurrency, structured output, a cost ledger and a content-addressed cache
(``docs/llm.md``)."""

from __future__ import annotations

from ragjudge.llm.cache import LLMCache, cache_key
from ragjudge.llm.client import LLMClient
from ragjudge.llm.ledger import Ledger, LedgerEntry, Price, PriceTable
from ragjudge.llm.settings import LLMSettings
from ragjudge.llm.tokens import DryRunEstimate, dry_run, estimate_tokens
from ragjudge.llm.types import TEMPLATE_HEADER, LLMError, LLMResult

__all__ = [
    "TEMPLATE_HEADER",
    "DryRunEstimate",
    "LLMCache",
    "LLMClient",
    "LLMError",
    "LLMResult",
    "LLMSettings",
    "Ledger",
    "LedgerEntry",
    "Price",
    "PriceTable",
    "cache_key",
    "dry_run",
    "estimate_tokens",
]
