"""What every reranker shares: the document texts it reads and a score cache.

Rerankers get the corpus through ``index(documents)`` (``Pipeline.index`` does it); a
ranking naming a document that was never indexed is a ``DataError``. ``ScoreCache`` keeps
pointwise scores in ``RAGJUDGE_HOME/rerank.sqlite`` keyed by (model, sha256(query), content
hash of the document), so scoring a repeated (query, document) pair costs nothing.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence

from ragjudge.errors import ConfigError, DataError, sqlite_file_error
from ragjudge.home import state_path
from ragjudge.schema import Document, Ranking

from ..base import check_documents, check_k, content_hash, doc_text, make_ranking


class ScoreCache:
    """(model, query, document content) -> score, in SQLite."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._lock = threading.Lock()
        path = state_path("rerank.sqlite")
        self._db = sqlite3.connect(path, check_same_thread=False)
        try:
            with self._lock, self._db:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS scores (model TEXT, query TEXT, doc TEXT, "
                    "score REAL, PRIMARY KEY (model, query, doc))"
                )
        except sqlite3.DatabaseError as exc:
            raise sqlite_file_error(path, exc) from None
        self.hits = 0
        self.misses = 0

    @staticmethod
    def query_key(query: str) -> str:
        return hashlib.sha256(query.encode()).hexdigest()

    def peek(self, query: str, doc_keys: Sequence[str]) -> dict[str, float]:
        """The cached scores among ``doc_keys`` (nothing is computed)."""
        q = self.query_key(query)
        found: dict[str, float] = {}
        unique = list(dict.fromkeys(doc_keys))
        with self._lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT doc, score FROM scores WHERE model=? AND query=? AND doc IN ({marks})",
                    [self.model, q, *chunk],
                )
                found.update({d: float(s) for d, s in rows})
        return found

    def put(self, query: str, scores: Mapping[str, float]) -> None:
        q = self.query_key(query)
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO scores VALUES (?, ?, ?, ?)",
                [(self.model, q, d, float(s)) for d, s in scores.items()],
            )

    def scores(
        self,
        query: str,
        doc_keys: Sequence[str],
        compute: Callable[[list[int]], Sequence[float]],
    ) -> list[float]:
        """Score of every document; ``compute(positions)`` scores only the cache misses."""
        found = self.peek(query, doc_keys)
        todo = [i for i, h in enumerate(doc_keys) if h not in found]
        self.hits += len(doc_keys) - len(todo)
        self.misses += len(todo)
        if todo:
            new = {doc_keys[i]: float(s) for i, s in zip(todo, compute(todo), strict=True)}
            self.put(query, new)
            found.update(new)
        return [found[h] for h in doc_keys]


class DocumentTexts:
    """The indexed corpus of a reranker: id -> document."""

    def __init__(self, who: str) -> None:
        self.who = who
        self.docs: dict[str, Document] = {}

    def index(self, documents: Sequence[Document]) -> None:
        self.docs = {d.id: d for d in check_documents(documents, self.who)}

    def get(self, ids: Sequence[str]) -> list[Document]:
        if not self.docs:
            raise ConfigError(f"{self.who}: call index(documents) before rerank")
        missing = [i for i in ids if i not in self.docs]
        if missing:
            raise DataError(
                f"{self.who}: {len(missing)} ranked documents are not in the indexed corpus "
                f"(e.g. {missing[0]!r})"
            )
        return [self.docs[i] for i in ids]


class PointwiseReranker:
    """Scores each (query, document) pair independently; subclasses give ``_score``."""

    name: str
    model_key: str

    def __init__(self) -> None:
        self.texts = DocumentTexts(self.name)
        self.cache = ScoreCache(self.model_key)

    def index(self, documents: Sequence[Document]) -> None:
        self.texts.index(documents)

    def _score(self, query: str, docs: list[Document]) -> Sequence[float]:
        raise NotImplementedError

    def rerank(self, query: str, ranking: Ranking, k: int) -> Ranking:
        """The ``k`` best of ``ranking`` by this model's score (ties: first-stage order)."""
        check_k(k, self.name)
        docs = self.texts.get(ranking.doc_ids)
        if not docs:
            return Ranking(query_id=ranking.query_id, docs=[])
        hashes = [content_hash(d) for d in docs]
        scores = self.cache.scores(
            query, hashes, lambda pos: self._score(query, [docs[i] for i in pos])
        )
        return make_ranking(ranking.query_id, zip(ranking.doc_ids, scores, strict=True), k)

    def rerank_all(
        self, queries: Mapping[str, str], rankings: Mapping[str, Ranking], k: int
    ) -> dict[str, Ranking]:
        from ..progress import progress_bar

        out: dict[str, Ranking] = {}
        with progress_bar(f"re-ranking with {self.name}", len(rankings), min_total=5) as advance:
            for qid, r in rankings.items():
                out[qid] = self.rerank(queries[qid], r, k)
                advance(1)
        return out


def passage(doc: Document) -> str:
    return doc_text(doc)
