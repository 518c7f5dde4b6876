"""Hybrid first stage: dense and BM25 run concurrently (two threads), their top ``depth``
lists are merged, de-duplicated and fused (``fusion="rrf"``, k=60, default; or ``"score"``,
min-max normalised score fusion with ``weights`` (dense, sparse)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ragjudge.errors import ConfigError
from ragjudge.protocols import Retriever
from ragjudge.schema import Document, Ranking

from .base import check_documents, check_queries, clamp_k, make_ranking
from .fusion import FUSIONS, minmax, rrf


class HybridRetriever:
    """Dense + sparse, fused."""

    def __init__(
        self,
        dense: Retriever,
        sparse: Retriever,
        *,
        fusion: str = "rrf",
        rrf_k: int = 60,
        weights: Sequence[float] = (1.0, 1.0),
        depth: int = 100,
    ) -> None:
        if fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion {fusion!r}; known: {', '.join(FUSIONS)}")
        if depth < 1:
            raise ConfigError(f"hybrid depth must be >= 1, got {depth}")
        self.dense, self.sparse = dense, sparse
        self.fusion, self.rrf_k, self.weights, self.depth = fusion, rrf_k, tuple(weights), depth
        how = f"rrf(k={rrf_k})" if fusion == "rrf" else f"minmax(w={self.weights})"
        self.name = f"hybrid({dense.name}+{sparse.name},{how})"
        self._n = 0

    def index(self, documents: Sequence[Document]) -> None:
        docs = check_documents(documents, self.name)
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = [pool.submit(r.index, docs) for r in (self.dense, self.sparse)]
            for j in jobs:
                j.result()
        self._n = len(docs)

    def retrieve(self, queries: Mapping[str, str], k: int) -> dict[str, Ranking]:
        qs = check_queries(queries, self.name)
        if not self._n:
            raise ConfigError(f"{self.name}: call index(documents) before retrieve")
        k_ = clamp_k(k, self._n, self.name)
        depth = min(max(self.depth, k_), self._n)
        with ThreadPoolExecutor(max_workers=2) as pool:
            fd = pool.submit(self.dense.retrieve, qs, depth)
            fs = pool.submit(self.sparse.retrieve, qs, depth)
            dense, sparse = fd.result(), fs.result()
        out: dict[str, Ranking] = {}
        for qid in qs:
            lists = [dense[qid], sparse[qid]]
            fused: dict[str, Any] = (
                rrf(lists, self.rrf_k) if self.fusion == "rrf" else minmax(lists, self.weights)
            )
            out[qid] = make_ranking(qid, fused.items(), k_)
        return out
