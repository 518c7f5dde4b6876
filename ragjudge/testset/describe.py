"""``ragjudge testset --describe DIR``: what a test set folder holds and how hard it is.

Per question type (``metadata.type``; ``unknown`` when absent, so any ragjudge/BEIR folder can
be described): the count, question and reference lengths in words (min / median / max), and for
the answerable questions the share a BM25 retriever (k1=0.9, b=0.4) over the folder's corpus
answers at rank 1 (``hit@1``: its first passage is judged relevant) and its mean NDCG@10 on the
graded qrels; plus examples of each type.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from ragjudge.errors import DataError, first_problem
from ragjudge.schema import TestSet

from .models import Manifest


class TypeStats(BaseModel):
    count: int
    question_words: tuple[int, float, int]
    """min, median, max."""
    reference_words: tuple[int, float, int]
    answerable: int
    bm25_hit_at_1: float | None
    bm25_ndcg_at_10: float | None
    examples: list[dict[str, Any]] = Field(default_factory=list)


class Description(BaseModel):
    name: str
    n_questions: int
    n_passages: int
    types: dict[str, TypeStats]
    overall_bm25_hit_at_1: float | None
    overall_bm25_ndcg_at_10: float | None
    manifest: Manifest | None = None


def _spread(values: Sequence[int]) -> tuple[int, float, int]:
    if not values:
        return (0, 0.0, 0)
    return (min(values), float(statistics.median(values)), max(values))


def bm25_scores(ts: TestSet) -> dict[str, tuple[float, float]]:
    """Case id -> (hit@1, NDCG@10) of BM25 over the set's documents, for judged cases."""
    from ragjudge.metrics.ndcg import ndcg_at_k
    from ragjudge.retrieval.bm25 import BM25Retriever

    judged = {c.id: c for c in ts.cases if c.relevant}
    if not judged:
        return {}
    r = BM25Retriever()
    r.index(ts.documents)
    runs = r.retrieve({cid: c.question for cid, c in judged.items()}, 10)
    out = {}
    for cid, c in judged.items():
        ids = [d.doc_id for d in runs[cid].docs]
        hit = float(bool(ids) and c.relevant.get(ids[0], 0) > 0)
        out[cid] = (hit, ndcg_at_k(ids, c.relevant, 10))
    return out


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def describe_testset(ts: TestSet, *, examples: int = 2) -> Description:
    scores = bm25_scores(ts)
    by_type: dict[str, list[Any]] = {}
    for c in ts.cases:
        by_type.setdefault(str(c.metadata.get("type", "unknown")), []).append(c)
    types = {}
    for t, cases in by_type.items():
        s = [scores[c.id] for c in cases if c.id in scores]
        types[t] = TypeStats(
            count=len(cases),
            question_words=_spread([len(c.question.split()) for c in cases]),
            reference_words=_spread([len((c.reference or "").split()) for c in cases]),
            answerable=sum(bool(c.relevant) for c in cases),
            bm25_hit_at_1=_mean([h for h, _ in s]),
            bm25_ndcg_at_10=_mean([n for _, n in s]),
            examples=[
                {
                    "id": c.id,
                    "question": c.question,
                    "reference": c.reference,
                    "relevant": c.relevant,
                }
                for c in cases[:examples]
            ],
        )
    vals = list(scores.values())
    return Description(
        name=ts.name,
        n_questions=len(ts.cases),
        n_passages=len(ts.documents),
        types=types,
        overall_bm25_hit_at_1=_mean([h for h, _ in vals]),
        overall_bm25_ndcg_at_10=_mean([n for _, n in vals]),
    )


def describe_folder(folder: str | Path) -> Description:
    """``describe_testset`` of a folder, with its ``testset.json`` manifest when present."""
    from ragjudge.io import load_testset

    root = Path(folder)
    desc = describe_testset(load_testset(root))
    manifest = root / "testset.json"
    if manifest.is_file():
        desc.manifest = read_manifest(manifest)
    return desc


def read_manifest(path: Path) -> Manifest:
    """A ``testset.json`` (``Manifest``); unreadable, not JSON or not a manifest is a
    ``DataError`` naming the file (and the field at fault)."""
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise DataError(f"cannot read the test set manifest: {exc}", path=path) from None
    except ValidationError as exc:
        raise DataError(f"not a test set manifest ({first_problem(exc)})", path=path) from None
