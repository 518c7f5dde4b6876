"""The re-ranking study: does a reranker help the bi-encoder, and for which queries?

For every judged query: the first stage's top ``depth`` and the reranker's re-ordering of it;
NDCG@5 of each (``ragjudge.metrics``); the 1-based ranks of the relevant documents in each
(None = not in the list). A query is *fixed* when NDCG@5 rises by more than ``eps``, *broken*
when it falls by more. Queries are then grouped by terciles of two features, query length
(content words) and lexical overlap (the largest share of the query's content words found in a
relevant document), and each group's mean change is reported with its fixed/broken counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from ragjudge.schema import Document, Qrels, Ranking
from ragjudge.text import content_words

from .base import doc_text


class QueryChange(BaseModel):
    query_id: str
    text: str
    before: float
    after: float
    ranks_before: list[int | None]
    ranks_after: list[int | None]
    length: int
    overlap: float


class GroupChange(BaseModel):
    feature: str
    group: str
    n: int
    mean_delta: float
    fixed: int
    broken: int


class RerankStudy(BaseModel):
    retriever: str
    reranker: str
    depth: int
    summary: dict[str, Any]
    fixed: list[QueryChange]
    broken: list[QueryChange]
    groups: list[GroupChange]
    analysis: list[str]
    per_query: list[QueryChange]


def _ranks(ranking: Ranking, relevant: Mapping[str, int]) -> list[int | None]:
    pos = {d: i + 1 for i, d in enumerate(ranking.doc_ids)}
    rel = sorted((d for d, g in relevant.items() if g > 0), key=lambda d: pos.get(d, 10**9))
    return [pos.get(d) for d in rel]


def _overlap(query: str, relevant: Mapping[str, int], docs: Mapping[str, Document]) -> float:
    words = set(content_words(query))
    if not words:
        return 0.0
    shares = [
        len(words & set(content_words(doc_text(docs[d])))) / len(words)
        for d, g in relevant.items()
        if g > 0 and d in docs
    ]
    return max(shares, default=0.0)


def _groups(rows: list[QueryChange], feature: str, eps: float) -> list[GroupChange]:
    values = np.array([getattr(r, feature) for r in rows], dtype=float)
    lo, hi = np.quantile(values, [1 / 3, 2 / 3])
    names = ("short", "medium", "long") if feature == "length" else ("low", "medium", "high")
    fmt = "{:.0f}" if feature == "length" else "{:.2f}"
    bins = [
        (f"{names[0]} (<= {fmt.format(lo)})", values <= lo),
        (f"{names[1]}", (values > lo) & (values <= hi)),
        (f"{names[2]} (> {fmt.format(hi)})", values > hi),
    ]
    out = []
    for label, mask in bins:
        sel = [r for r, m in zip(rows, mask, strict=True) if m]
        if not sel:
            continue
        deltas = [r.after - r.before for r in sel]
        out.append(
            GroupChange(
                feature="query length" if feature == "length" else "lexical overlap",
                group=label,
                n=len(sel),
                mean_delta=float(np.mean(deltas)),
                fixed=sum(d > eps for d in deltas),
                broken=sum(d < -eps for d in deltas),
            )
        )
    return out


def _analysis(groups: list[GroupChange], before: float, after: float) -> list[str]:
    lines = [
        f"overall NDCG@5 {'rises' if after > before else 'falls'} by {abs(after - before):.4f}"
    ]
    for feature in ("query length", "lexical overlap"):
        gs = [g for g in groups if g.feature == feature]
        if len(gs) < 2:
            continue
        best = max(gs, key=lambda g: g.mean_delta)
        worst = min(gs, key=lambda g: g.mean_delta)
        lines.append(
            f"by {feature}: {best.group} queries gain most ({best.mean_delta:+.4f}, "
            f"{best.fixed} fixed / {best.broken} broken); {worst.group} queries "
            f"{'lose most' if worst.mean_delta < 0 else 'gain least'} ({worst.mean_delta:+.4f}, "
            f"{worst.fixed} fixed / {worst.broken} broken)"
        )
    return lines


def rerank_study(
    retriever: Any,
    reranker: Any,
    documents: Sequence[Document],
    queries: Mapping[str, str],
    qrels: Qrels,
    *,
    depth: int = 20,
    eps: float = 1e-9,
) -> RerankStudy:
    from ragjudge.metrics import evaluate_rankings

    from .pipeline import _rerank_all

    retriever.index(documents)
    index = getattr(reranker, "index", None)
    if callable(index):
        index(documents)
    before = retriever.retrieve(queries, depth)
    after = _rerank_all(reranker, queries, before, depth)
    judged = {q: qrels[q] for q in queries if q in qrels}
    rb = evaluate_rankings(judged, before, ks=[5], ci=False)
    ra = evaluate_rankings(judged, after, ks=[5], ci=False)
    docs = {d.id: d for d in documents}
    rows = [
        QueryChange(
            query_id=q,
            text=queries[q],
            before=rb.per_query[q]["ndcg@5"],
            after=ra.per_query[q]["ndcg@5"],
            ranks_before=_ranks(before[q], judged[q]),
            ranks_after=_ranks(after[q], judged[q]),
            length=len(content_words(queries[q])),
            overlap=_overlap(queries[q], judged[q], docs),
        )
        for q in judged
    ]
    fixed = sorted((r for r in rows if r.after - r.before > eps), key=lambda r: r.before - r.after)
    broken = sorted((r for r in rows if r.before - r.after > eps), key=lambda r: r.after - r.before)
    groups = _groups(rows, "length", eps) + _groups(rows, "overlap", eps) if rows else []
    b, a = rb.mean["ndcg@5"], ra.mean["ndcg@5"]
    summary = {
        "n_queries": len(rows),
        "ndcg5_before": b,
        "ndcg5_after": a,
        "fixed": len(fixed),
        "broken": len(broken),
        "unchanged": len(rows) - len(fixed) - len(broken),
    }
    return RerankStudy(
        retriever=retriever.name,
        reranker=reranker.name,
        depth=depth,
        summary=summary,
        fixed=fixed,
        broken=broken,
        groups=groups,
        analysis=_analysis(groups, b, a),
        per_query=rows,
    )
