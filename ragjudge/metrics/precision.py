"""Precision@k = |relevant in top k| / k.

The denominator is k even when fewer than k documents were retrieved (trec_eval's ``P_k``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._common import relevant_flags


def precision_at_k(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int, threshold: int = 1
) -> float:
    return sum(relevant_flags(ranked_ids, grades, threshold, k)) / k
