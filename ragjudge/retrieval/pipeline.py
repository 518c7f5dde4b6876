"""A retrieval funnel: a first stage and any number of (reranker or None, depth) stages.

``Pipeline(r, stages=[(None, 50), (reranker, 10)])`` retrieves ``max(depths[0], k)`` with
``r``; a ``(None, depth)`` stage cuts the list to ``depth``; a ``(reranker, depth)`` stage
re-orders the top ``depth`` and keeps the rest after them in their previous order (scored below
the re-ordered head); the result is cut to ``k``. A stage can only re-order documents the
stage before returned, so depths must not increase. ``index`` indexes the first stage and hands
the corpus to every reranker.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from ragjudge.errors import ConfigError
from ragjudge.protocols import Reranker, Retriever
from ragjudge.schema import Document, Ranking, ScoredDoc

from .base import check_documents, check_k, check_queries, clamp_k
from .progress import progress_bar


class Pipeline:
    def __init__(
        self, retriever: Retriever, stages: Sequence[tuple[Reranker | None, int]] = ()
    ) -> None:
        self.retriever = retriever
        self.stages = [(r, int(d)) for r, d in stages]
        for r, d in self.stages:
            if d < 1:
                raise ConfigError(f"pipeline stage depth must be >= 1, got {d}")
            if r is not None and not callable(getattr(r, "rerank", None)):
                raise ConfigError(f"pipeline stage {r!r} is not a reranker")
        depths = [d for _, d in self.stages]
        if any(b > a for a, b in itertools.pairwise(depths)):
            raise ConfigError(f"pipeline stage depths must not increase, got {depths}")
        parts = [retriever.name]
        for r, d in self.stages:
            parts.append(f"{r.name}@{d}" if r is not None else f"prune@{d}")
        self.name = " -> ".join(parts)
        self._n = 0

    def index(self, documents: Sequence[Document]) -> None:
        docs = check_documents(documents, self.name)
        self.retriever.index(docs)
        for r, _ in self.stages:
            index = getattr(r, "index", None)
            if callable(index):
                index(docs)
        self._n = len(docs)

    def retrieve(self, queries: Mapping[str, str], k: int) -> dict[str, Ranking]:
        qs = check_queries(queries, self.name)
        check_k(k, self.name)
        if not self.stages:
            return self.retriever.retrieve(qs, k)
        first_k = max(self.stages[0][1], k)
        if self._n:
            first_k = clamp_k(first_k, self._n, self.name)
        rankings = self.retriever.retrieve(qs, first_k)
        for reranker, depth in self.stages:
            if reranker is None:
                rankings = {q: r.top(depth) for q, r in rankings.items()}
                continue
            head = {q: r.top(depth) for q, r in rankings.items()}
            reordered = _rerank_all(reranker, qs, head, depth)
            rankings = {q: _with_tail(reordered[q], r) for q, r in rankings.items()}
        return {q: r.top(k) for q, r in rankings.items()}


def _with_tail(head: Ranking, previous: Ranking) -> Ranking:
    """``head`` followed by the documents of ``previous`` it does not hold, in their order,
    scored strictly below the head."""
    seen = set(head.doc_ids)
    tail = [d.doc_id for d in previous.docs if d.doc_id not in seen]
    if not tail:
        return head
    floor = min((d.score for d in head.docs), default=0.0)
    docs = list(head.docs) + [
        ScoredDoc(doc_id=d, score=floor - 1.0 - i) for i, d in enumerate(tail)
    ]
    return Ranking(query_id=previous.query_id, docs=docs)


def _rerank_all(
    reranker: Any, queries: Mapping[str, str], rankings: Mapping[str, Ranking], k: int
) -> dict[str, Ranking]:
    batch = getattr(reranker, "rerank_all", None)
    if callable(batch):
        out: dict[str, Ranking] = batch(queries, rankings, k)
        return out
    res: dict[str, Ranking] = {}
    with progress_bar(f"re-ranking with {reranker.name}", len(rankings), min_total=5) as advance:
        for q, r in rankings.items():
            res[q] = reranker.rerank(queries[q], r, k)
            advance(1)
    return res
