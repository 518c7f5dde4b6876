"""A retrieval funnel: a first stage and any number of (reranker or None, depth) stages.

``Pipeline(r, stages=[(None, 50), (reranker, 10)])`` retrieves ``max(depths[0], k)`` with
``r``; a ``(None, depth)`` stage cuts the list to ``depth``; a ``(reranker, depth)`` stage
re-orders the top ``depth`` and keeps the rest after them in their previous order (scored below
the re-ordered head); the result is cut to ``k``. A stage can only re-order documents the
stage before returned, so depths must not increase. ``index`` indexes the first stage and hands
the corpus to every reranker.

A reranker stage may carry a third element ``keep`` in [0, 1] (default 0): inside the re-ordered
head, final(d) = (1 - keep) * mm(reranker score)(d) + keep * mm(previous score)(d), with mm the
min-max normalisation over the head (a constant list maps to 1). ``keep`` = 0 is the
reranker's order; ``keep`` = 1 keeps the previous order. Interpolating keeps the first stage's
evidence (e.g. BM25's exact-term matches) that a reranker alone would throw away.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from ragjudge.errors import ConfigError
from ragjudge.protocols import Reranker, Retriever
from ragjudge.schema import Document, Ranking, ScoredDoc

from .base import check_documents, check_k, check_queries, clamp_k
from .fusion import minmax
from .progress import progress_bar

Stage = tuple[Reranker | None, int] | tuple[Reranker | None, int, float]
"""``(reranker or None, depth)`` or ``(reranker, depth, keep)``."""


class Pipeline:
    def __init__(self, retriever: Retriever, stages: Sequence[Stage] = ()) -> None:
        self.retriever = retriever
        self.stages: list[tuple[Reranker | None, int, float]] = []
        for stage in stages:
            r, d = stage[0], int(stage[1])
            keep = float(stage[2]) if len(stage) > 2 else 0.0
            if d < 1:
                raise ConfigError(f"pipeline stage depth must be >= 1, got {d}")
            if r is not None and not callable(getattr(r, "rerank", None)):
                raise ConfigError(f"pipeline stage {r!r} is not a reranker")
            if not 0.0 <= keep <= 1.0 or (r is None and keep):
                raise ConfigError(f"pipeline stage keep must be in [0, 1] on a reranker: {keep}")
            self.stages.append((r, d, keep))
        depths = [d for _, d, _ in self.stages]
        if any(b > a for a, b in itertools.pairwise(depths)):
            raise ConfigError(f"pipeline stage depths must not increase, got {depths}")
        parts = [retriever.name]
        for r, d, keep in self.stages:
            if r is None:
                parts.append(f"prune@{d}")
            else:
                parts.append(f"{r.name}@{d}" + (f"(keep={keep:g})" if keep else ""))
        self.name = " -> ".join(parts)
        self._n = 0

    def index(self, documents: Sequence[Document]) -> None:
        docs = check_documents(documents, self.name)
        self.retriever.index(docs)
        for r, _, _ in self.stages:
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
        for reranker, depth, keep in self.stages:
            if reranker is None:
                rankings = {q: r.top(depth) for q, r in rankings.items()}
                continue
            head = {q: r.top(depth) for q, r in rankings.items()}
            reordered = _rerank_all(reranker, qs, head, depth)
            if keep:
                reordered = {q: interpolate(reordered[q], head[q], keep) for q in reordered}
            rankings = {q: _with_tail(reordered[q], r) for q, r in rankings.items()}
        return {q: r.top(k) for q, r in rankings.items()}


def interpolate(reranked: Ranking, previous: Ranking, keep: float) -> Ranking:
    """The documents of ``reranked`` scored (1 - keep) * mm(reranked) + keep * mm(previous),
    i.e. ``fusion.minmax`` of the two lists over those documents; ties keep the previous order."""
    ids = set(reranked.doc_ids)
    head = Ranking(query_id=previous.query_id, docs=[d for d in previous.docs if d.doc_id in ids])
    final = minmax([reranked, head], (1 - keep, keep))
    position = {d: i for i, d in enumerate(head.doc_ids)}
    order = sorted(final, key=lambda d: (-final[d], position.get(d, len(position))))
    return Ranking(
        query_id=reranked.query_id, docs=[ScoredDoc(doc_id=d, score=final[d]) for d in order]
    )


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
