"""Any LangChain ``BaseRetriever`` as a ragjudge ``Retriever``.

The LangChain retriever owns its index (``index`` only records the corpus, so ids it returns
can be checked). A returned document's id is ``Document.id``, else ``metadata[id_key]``
(default ``"id"``); its score is ``metadata[score_key]`` (default ``"score"``) when present,
else 1 / rank (for all, if any lacks a score). Duplicates keep their first position; at
most ``k`` are kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragjudge.errors import DataError
from ragjudge.schema import Document, Ranking

from .base import check_documents, check_k, check_queries, make_ranking


class LangChainRetriever:
    def __init__(self, retriever: Any, *, id_key: str = "id", score_key: str = "score") -> None:
        from langchain_core.retrievers import BaseRetriever

        if not isinstance(retriever, BaseRetriever):
            raise TypeError(f"expected a langchain_core BaseRetriever, got {type(retriever)}")
        self.retriever = retriever
        self.id_key, self.score_key = id_key, score_key
        self.name = f"langchain({type(retriever).__name__})"
        self._known: set[str] | None = None

    def index(self, documents: Sequence[Document]) -> None:
        self._known = {d.id for d in check_documents(documents, self.name)}

    def _doc_id(self, doc: Any, query_id: str) -> str:
        value = getattr(doc, "id", None) or doc.metadata.get(self.id_key)
        if not value:
            raise DataError(
                f"{self.name}: a document returned for query {query_id!r} has no id "
                f"(set Document.id or metadata[{self.id_key!r}])"
            )
        return str(value)

    def retrieve(self, queries: Mapping[str, str], k: int) -> dict[str, Ranking]:
        qs = check_queries(queries, self.name)
        check_k(k, self.name)
        out: dict[str, Ranking] = {}
        for qid, text in qs.items():
            docs = self.retriever.invoke(text)
            ids: list[str] = []
            raw: list[Any] = []
            for doc in docs:
                did = self._doc_id(doc, qid)
                if did in ids:
                    continue
                if self._known is not None and did not in self._known:
                    raise DataError(f"{self.name} returned {did!r}, which is not in the corpus")
                ids.append(did)
                raw.append(doc.metadata.get(self.score_key))
            if all(isinstance(r, int | float) for r in raw):
                scored = [(d, float(r)) for d, r in zip(ids, raw, strict=True)]
            else:
                scored = [(d, 1.0 / rank) for rank, d in enumerate(ids, start=1)]
            out[qid] = make_ranking(qid, scored, k)
        return out
