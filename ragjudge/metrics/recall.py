"""Recall@k = |relevant in top k| / R, with R the number of judged documents of grade >= t.

A query with R = 0 scores 0 (trec_eval's ``recall_k``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._common import num_relevant, relevant_flags


def recall_at_k(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int, threshold: int = 1
) -> float:
    hits = sum(relevant_flags(ranked_ids, grades, threshold, k))
    r = num_relevant(grades, threshold)
    return hits / r if r else 0.0
