"""Average precision AP@k = (1/R) * sum_{i <= k, rel_i} P@i, with R the number of judged
documents of grade >= t (not min(k, R)): trec_eval's ``map_cut_k``, and ``map`` for ``k=None``.

A query with R = 0 scores 0. The mean over queries is MAP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._common import num_relevant, relevant_flags


def average_precision(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int | None = None, threshold: int = 1
) -> float:
    r = num_relevant(grades, threshold)
    if not r:
        return 0.0
    hits = 0
    total = 0.0
    for rank, rel in enumerate(relevant_flags(ranked_ids, grades, threshold, k), start=1):
        if rel:
            hits += 1
            total += hits / rank
    return total / r
