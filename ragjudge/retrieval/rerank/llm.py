"""LLM listwise reranking, RankGPT-style (Sun et al. 2023), over an OpenAI-compatible endpoint.

The ``depth`` documents are re-ordered by a window of ``window`` passages sliding from the
bottom of the list to the top in steps of ``step`` (so a relevant passage can climb
``window - step`` places per call and reach the top in one pass). Each call renders the
``rerank/listwise`` prompt and expects ``[i] > [j] > ...``; identifiers that are missing,
repeated or out of range are ignored and the passages not named keep their relative order
after the named ones. A failed call (an ``LLMResult`` with an error) leaves its window as it was
and is counted in ``failed_calls`` (the latest message in ``last_error``); an order touched by a
failed call is not kept in ``rerank.sqlite``. The final score of the document at position p
(from 0) of n is n - p.

Costs: every call goes through ``ragjudge.llm.LLMClient`` (its call cache makes a repeated
window free); the final order is also kept in ``rerank.sqlite`` keyed by (model, window, step,
query, the ordered content hashes of the list), so a repeated query costs no call at all.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ragjudge.errors import ConfigError
from ragjudge.schema import Document, Ranking

from ..base import check_k, content_hash, doc_text, make_ranking
from .base import DocumentTexts, ScoreCache

T = TypeVar("T")
_ID = re.compile(r"\[(\d+)\]")


def parse_permutation(text: str, n: int) -> list[int]:
    """0-based order of ``n`` passages from ``[3] > [1] > ...``: named ids first (valid, first
    occurrence), then the rest in their given order."""
    named: list[int] = []
    for m in _ID.finditer(text):
        i = int(m.group(1)) - 1
        if 0 <= i < n and i not in named:
            named.append(i)
    return named + [i for i in range(n) if i not in named]


def window_starts(n: int, window: int, step: int) -> list[tuple[int, int]]:
    """(start, end) of each window, bottom first, the last one starting at 0."""
    spans: list[tuple[int, int]] = []
    end = n
    while True:
        start = max(0, end - window)
        spans.append((start, end))
        if start == 0:
            return spans
        end -= step


def _run(coro: Any) -> Any:
    """Run a coroutine from sync code, also when an event loop is already running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class LLMListwiseReranker:
    def __init__(
        self,
        *,
        client: Any = None,
        window: int = 20,
        step: int = 10,
        model: str | None = None,
        max_chars: int = 1200,
        prompt: str = "rerank/listwise",
    ) -> None:
        if window < 2 or not 1 <= step < window:
            raise ConfigError(
                f"llm reranker: need window >= 2 and 1 <= step < window, got {window}, {step}"
            )
        from ragjudge.prompts import load_prompt

        self.client = client
        self.model_override = model
        self.window, self.step, self.max_chars = window, step, max_chars
        self.prompt = load_prompt(prompt)
        model_name = model or (client.model if client is not None else "env")
        self.name = f"llm-listwise({model_name},w={window},s={step})"
        self.texts = DocumentTexts(self.name)
        self.failed_calls = 0
        self.calls = 0
        self.last_error: str | None = None
        """The message of the latest failed call (the sweep names it when all failed)."""

    def index(self, documents: Sequence[Document]) -> None:
        self.texts.index(documents)

    def _client(self) -> Any:
        if self.client is None:
            from ragjudge.llm import LLMClient

            overrides: dict[str, Any] = (
                {"model": self.model_override} if self.model_override else {}
            )
            self.client = LLMClient.from_env(**overrides)
        return self.client

    def _cache(self) -> ScoreCache:
        key = f"llm-listwise:{self._client().model}:w{self.window}:s{self.step}:{self.prompt.ref}"
        return ScoreCache(key)

    async def _window(self, query: str, docs: list[Document], tags: dict[str, Any]) -> list[int]:
        passages = [doc_text(d)[: self.max_chars] for d in docs]
        messages = self.prompt.render(query=query, passages=passages)
        self.calls += 1
        res = await self._client().chat(messages, prompt=self.prompt.ref, tags=tags, temperature=0)
        if not res.ok:
            self.failed_calls += 1
            self.last_error = res.error.message if res.error else "no reply"
            return list(range(len(docs)))
        return parse_permutation(str(res.value), len(docs))

    async def _order(self, qid: str, query: str, docs: list[Document]) -> list[Document]:
        order = list(docs)
        for start, end in window_starts(len(order), self.window, self.step):
            part = order[start:end]
            perm = await self._window(query, part, {"query": qid, "window": f"{start}-{end}"})
            order[start:end] = [part[i] for i in perm]
        return order

    async def _arerank(self, query: str, ranking: Ranking, k: int, cache: ScoreCache) -> Ranking:
        docs = self.texts.get(ranking.doc_ids)
        if not docs:
            return Ranking(query_id=ranking.query_id, docs=[])
        hashes = [content_hash(d) for d in docs]
        list_key = hashlib.sha256("|".join(hashes).encode()).hexdigest()
        keys = [f"{list_key}:{h}" for h in hashes]
        found = cache.peek(query, keys)
        if len(found) < len(keys):
            failed = self.failed_calls
            order = await self._order(ranking.query_id, query, docs)
            pos = {content_hash(d): p for p, d in enumerate(order)}
            found = {f"{list_key}:{h}": float(len(order) - pos[h]) for h in hashes}
            if self.failed_calls == failed:  # an order left as it was by a failure is not kept
                cache.put(query, found)
            cache.misses += len(keys)
        else:
            cache.hits += len(keys)
        scores = [found[key] for key in keys]
        return make_ranking(ranking.query_id, zip(ranking.doc_ids, scores, strict=True), k)

    def rerank(self, query: str, ranking: Ranking, k: int) -> Ranking:
        check_k(k, self.name)
        out: Ranking = _run(self._arerank(query, ranking, k, self._cache()))
        return out

    def rerank_all(
        self, queries: Mapping[str, str], rankings: Mapping[str, Ranking], k: int
    ) -> dict[str, Ranking]:
        check_k(k, self.name)
        cache = self._cache()

        async def go() -> dict[str, Ranking]:
            items = list(rankings.items())
            done = await asyncio.gather(*(self._arerank(queries[q], r, k, cache) for q, r in items))
            return {q: r for (q, _), r in zip(items, done, strict=True)}

        result: dict[str, Ranking] = _run(go())
        return result
