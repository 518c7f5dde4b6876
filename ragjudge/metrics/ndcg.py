"""DCG@k = sum_{i=1..k} gain(g_i) / log2(i + 1);  NDCG@k = DCG@k / IDCG@k.

IDCG@k is the DCG@k of the judged grades sorted descending. Gains: ``"exponential"``
(2^g - 1, the default, Burges et al.) or ``"linear"`` (g, as trec_eval's ``ndcg_cut_k``).
Grades <= 0 (and unjudged documents) gain nothing; NDCG is 0 when IDCG is 0. NDCG uses the
grades themselves: the binary relevance threshold plays no part. NDCG computes the exponential
gains as 2^(g - m) - 2^(-m), m the query's highest grade: the same ratio, finite for any grade
(2^g overflows past g = 1023).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from ._common import check_k

Gain = Literal["exponential", "linear"]


def gain_of(grade: float, gain: Gain = "exponential", shift: float = 0.0) -> float:
    """The gain of ``grade``; an exponential gain is scaled by 2^-``shift`` (NDCG's ``m``)."""
    if grade <= 0:
        return 0.0
    if gain == "exponential":
        return 2.0 ** (grade - shift) - 2.0 ** (-shift)
    if gain == "linear":
        return float(grade)
    raise ValueError(f"gain must be 'exponential' or 'linear', got {gain!r}")


def dcg(
    grades_in_order: Iterable[float], k: int, gain: Gain = "exponential", shift: float = 0.0
) -> float:
    check_k(k)
    total = 0.0
    for i, g in enumerate(grades_in_order, start=1):
        if i > k:
            break
        total += gain_of(g, gain, shift) / math.log2(i + 1)
    return total


def dcg_at_k(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int, gain: Gain = "exponential"
) -> float:
    return dcg((grades.get(d, 0) for d in ranked_ids), k, gain)


def ndcg_at_k(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int, gain: Gain = "exponential"
) -> float:
    m = max(0, *grades.values()) if grades else 0
    ideal = dcg(sorted(grades.values(), reverse=True), k, gain, m)
    found = dcg((grades.get(d, 0) for d in ranked_ids), k, gain, m)
    return found / ideal if ideal > 0 else 0.0
