"""Shared checks and helpers of every retriever and reranker.

- ``check_documents`` / ``check_queries``: an empty corpus or query set is an error, not an
  empty result.
- ``clamp_k``: ``k`` larger than the corpus returns the whole corpus, with one counted warning.
- ``make_ranking``: ids and scores -> a ``Ranking`` with no duplicate ids, ordered by score
  (ties broken by doc id) with strictly decreasing scores (an exact tie is nudged down to the
  next representable float, so TREC tools keep the order).
- ``content_hash``: sha256 of ``title + "\\n" + text``, the key of every on-disk cache.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence

from ragjudge.errors import ConfigError, DataError
from ragjudge.io.diagnostics import warn_counted
from ragjudge.schema import Document, Ranking, ScoredDoc


def content_hash(doc: Document) -> str:
    """sha256 hex digest of the document's title and text."""
    return hashlib.sha256(f"{doc.title}\n{doc.text}".encode()).hexdigest()


def doc_text(doc: Document) -> str:
    """What encoders and rerankers read: ``title. text`` (or the text alone)."""
    return f"{doc.title}. {doc.text}" if doc.title else doc.text


def check_documents(documents: Sequence[Document], who: str) -> list[Document]:
    """The documents, or a ``DataError`` for an empty corpus or a duplicate id."""
    docs = list(documents)
    if not docs:
        raise DataError(f"{who}: the corpus is empty; index at least one document")
    seen: set[str] = set()
    for d in docs:
        if d.id in seen:
            raise DataError(f"{who}: document id {d.id!r} appears more than once in the corpus")
        seen.add(d.id)
    return docs


def check_queries(queries: Mapping[str, str], who: str) -> dict[str, str]:
    """The queries, or a ``DataError`` when there are none or one is blank."""
    if not queries:
        raise DataError(f"{who}: no queries given")
    blank = [q for q, text in queries.items() if not str(text).strip()]
    if blank:
        raise DataError(f"{who}: {len(blank)} queries have an empty text (e.g. {blank[0]!r})")
    return dict(queries)


def check_k(k: int, who: str) -> int:
    if not isinstance(k, int) or k < 1:
        raise ConfigError(f"{who}: k must be a positive integer, got {k!r}")
    return k


def clamp_k(k: int, n_docs: int, who: str) -> int:
    """``min(k, n_docs)``; warns (counted) when the corpus is smaller than ``k``."""
    check_k(k, who)
    if k > n_docs:
        warn_counted(
            f"requested k={k} but the corpus of {who} has only {n_docs} documents; "
            "returning all of them",
            [str(k)],
        )
        return n_docs
    return k


def make_ranking(query_id: str, scored: Iterable[tuple[str, float]], k: int) -> Ranking:
    """The best ``k`` of ``scored`` (first occurrence of an id wins), strictly ordered."""
    best: dict[str, float] = {}
    for doc_id, score in scored:
        s = float(score)
        if math.isnan(s):
            s = -math.inf
        if doc_id not in best or s > best[doc_id]:
            best[doc_id] = s
    ordered = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
    docs: list[ScoredDoc] = []
    prev = math.inf
    for doc_id, s in ordered:
        if s >= prev:
            s = math.nextafter(prev, -math.inf)
        docs.append(ScoredDoc(doc_id=doc_id, score=s))
        prev = s
    return Ranking(query_id=query_id, docs=docs)
