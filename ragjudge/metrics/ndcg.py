"""DCG@k = sum_{i=1..k} gain(g_i) / log2(i + 1);  NDCG@k = DCG@k / IDCG@k.

IDCG@k is the DCG@k of the judged grades sorted descending. Gains: ``"exponential"``
(2^g - 1, the default, Burges et al.) or ``"linear"`` (g, as trec_eval's ``ndcg_cut_k``).
Grades <= 0 (and unjudged documents) gain nothing; NDCG is 0 when IDCG is 0. NDCG uses the
grades themselves: the binary relevance threshold plays no part.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from ._common import check_k

Gain = Literal["exponential", "linear"]


def gain_of(grade: float, gain: Gain = "exponential") -> float:
    if grade <= 0:
        return 0.0
    if gain == "exponential":
        return 2.0**grade - 1.0
    if gain == "linear":
        return float(grade)
    raise ValueError(f"gain must be 'exponential' or 'linear', got {gain!r}")


def dcg(grades_in_order: Iterable[float], k: int, gain: Gain = "exponential") -> float:
    check_k(k)
    total = 0.0
    for i, g in enumerate(grades_in_order, start=1):
        if i > k:
            break
        total += gain_of(g, gain) / math.log2(i + 1)
    return total


def dcg_at_k(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int, gain: Gain = "exponential"
) -> float:
    return dcg((grades.get(d, 0) for d in ranked_ids), k, gain)


def ndcg_at_k(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int, gain: Gain = "exponential"
) -> float:
    ideal = dcg(sorted(grades.values(), reverse=True), k, gain)
    return dcg_at_k(ranked_ids, grades, k, gain) / ideal if ideal > 0 else 0.0
