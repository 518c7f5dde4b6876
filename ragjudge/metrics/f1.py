"""F1@k = 2 * P@k * R@k / (P@k + R@k), the harmonic mean of precision and recall at k.

0 when both are 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .precision import precision_at_k
from .recall import recall_at_k


def f1_at_k(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int, threshold: int = 1
) -> float:
    p = precision_at_k(ranked_ids, grades, k, threshold)
    r = recall_at_k(ranked_ids, grades, k, threshold)
    return 2 * p * r / (p + r) if p + r else 0.0
