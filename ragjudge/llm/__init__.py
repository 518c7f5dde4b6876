"""The LLM layer: one async client for every OpenAI-compatible endpoint, with retries,
adaptive concurrency, structured output, a cost ledger and a content-addressed cache
(``docs/llm.md``).

The client factories live here, so that every part that calls an LLM (judges, the chat
generator, the LLM reranker) builds its client from this layer and none imports another:
``default_client()`` is the client configured from the environment, ``judge_clients(n)`` are
``n`` clients sharing one ledger and one cache (``default_cache()``: the SQLite file, or the
database of ``RAGJUDGE_LLM_CACHE_URL``, or the cache a Ray worker installed with
``use_cache``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragjudge.llm.cache import LLMCache, cache_key
from ragjudge.llm.client import LLMClient
from ragjudge.llm.ledger import Ledger, LedgerEntry, Price, PriceTable
from ragjudge.llm.opencache import default_cache
from ragjudge.llm.settings import LLMSettings
from ragjudge.llm.tokens import DryRunEstimate, dry_run, estimate_tokens
from ragjudge.llm.types import TEMPLATE_HEADER, LLMError, LLMResult


async def preflight(clients: Iterable[LLMClient]) -> None:
    """One pre-flight call per distinct (endpoint, model) of ``clients``, before a run spends
    anything; raises ``ConfigError`` (exit code 2) with the first failure's one line."""
    from ragjudge.errors import ConfigError

    seen: dict[str, LLMClient] = {}
    for c in clients:
        seen.setdefault(c.mode_key, c)
    for client in seen.values():
        error = await client.preflight()
        if error is not None:
            raise ConfigError(error.message)


async def preflight_judges(judges: Iterable[Any]) -> None:
    """``preflight`` of the LLM clients the judges call (a judge's ``client``: a cascade's is
    its LLM judge's; judges without one: nothing)."""
    clients = [getattr(j, "client", None) for j in judges]
    await preflight(c for c in clients if isinstance(c, LLMClient))


def default_client(**overrides: Any) -> LLMClient:
    """The LLM client configured from the environment (``OPENAI_BASE_URL`` etc.),
    ``overrides`` winning."""
    return LLMClient.from_env(**overrides)


def judge_clients(count: int, **overrides: Any) -> list[LLMClient]:
    """``count`` clients of the configured endpoint sharing one ledger and one cache.

    Each has its own HTTP connection pool and cache-write batches (the endpoint's concurrency
    limit stays shared).
    """
    ledger, cache = Ledger(), default_cache()
    return [LLMClient.from_env(ledger=ledger, cache=cache, **overrides) for _ in range(count)]


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
    "default_client",
    "dry_run",
    "estimate_tokens",
    "judge_clients",
    "preflight",
    "preflight_judges",
]
