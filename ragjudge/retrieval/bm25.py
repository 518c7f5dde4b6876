"""BM25 first stage (``bm25s``; Lucene-style BM25 with k1=0.9, b=0.4 by default, the BEIR
settings).

score(q, d) = sum over query terms t of idf(t) * tf(t,d) * (k1 + 1) /
(tf(t,d) + k1 * (1 - b + b * |d| / avgdl)), idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)).
Text is lower-cased and split on word characters; English stop words are removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragjudge.errors import ConfigError
from ragjudge.schema import Document, Ranking

from .base import check_documents, check_queries, clamp_k, doc_text, make_ranking


class BM25Retriever:
    """Sparse lexical retrieval over the indexed documents."""

    def __init__(
        self, *, k1: float = 0.9, b: float = 0.4, method: str = "lucene", stopwords: str = "en"
    ) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            raise ConfigError(f"bm25: need k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.k1, self.b, self.method, self.stopwords = k1, b, method, stopwords
        self.name = f"bm25(k1={k1},b={b})"
        self._ids: list[str] = []
        self._model: Any = None
        self._tokenizer: Any = None
        self._terms: dict[int, str] = {}

    def index(self, documents: Sequence[Document]) -> None:
        import bm25s
        from bm25s.tokenization import Tokenizer

        docs = check_documents(documents, self.name)
        self._ids = [d.id for d in docs]
        self._tokenizer = Tokenizer(stopwords=self.stopwords)
        tokens = self._tokenizer.tokenize(
            [doc_text(d) for d in docs], return_as="ids", show_progress=False
        )
        self._model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        self._model.index(self._tokenizer.to_tokenized_tuple(tokens), show_progress=False)
        self._terms = {v: t for t, v in self._tokenizer.get_vocab_dict().items()}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed document for one query (0 for no shared term)."""
        if self._model is None:
            raise ConfigError(f"{self.name}: call index(documents) before retrieve")
        ids = self._tokenizer.tokenize(
            [query], update_vocab=False, return_as="ids", show_progress=False
        )[0]
        terms = [self._terms[i] for i in ids if self._terms.get(i)]
        if not terms:
            return np.zeros(len(self._ids), dtype=np.float32)
        return np.asarray(self._model.get_scores(terms), dtype=np.float32)

    def retrieve(self, queries: Mapping[str, str], k: int) -> dict[str, Ranking]:
        qs = check_queries(queries, self.name)
        if self._model is None:
            raise ConfigError(f"{self.name}: call index(documents) before retrieve")
        k_ = clamp_k(k, len(self._ids), self.name)
        out: dict[str, Ranking] = {}
        for qid, text in qs.items():
            s = self.scores(text)
            top = np.argsort(-s, kind="stable")[:k_]
            out[qid] = make_ranking(qid, ((self._ids[i], float(s[i])) for i in top), k_)
        return out
