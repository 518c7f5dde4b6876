"""Document-level rankings from chunk-level ones.

When documents were chunked (``ragjudge.io.chunk_documents``), a retriever ranks chunks while
the qrels judge documents. The document-level ranking keeps, in order, the first (best-ranked)
chunk of every document, under the document's id and that chunk's score.
"""

from __future__ import annotations

from collections.abc import Mapping

from ragjudge.schema import Ranking, ScoredDoc


def to_document_level(ranking: Ranking, parent_of: Mapping[str, str]) -> Ranking:
    """``ranking`` with chunk ids replaced by document ids, duplicates after the first dropped.

    Ids missing from ``parent_of`` are taken to be documents already.
    """
    seen: set[str] = set()
    docs: list[ScoredDoc] = []
    for d in ranking.docs:
        parent = parent_of.get(d.doc_id, d.doc_id)
        if parent not in seen:
            seen.add(parent)
            docs.append(ScoredDoc(doc_id=parent, score=d.score))
    return Ranking(query_id=ranking.query_id, docs=docs)


def rankings_to_document_level(
    rankings: Mapping[str, Ranking], parent_of: Mapping[str, str]
) -> dict[str, Ranking]:
    return {q: to_document_level(r, parent_of) for q, r in rankings.items()}
