"""R-precision = |relevant in top R| / R, with R the number of judged documents of grade >= t.

Fewer than R retrieved documents still divide by R; R = 0 scores 0 (trec_eval's ``Rprec``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._common import num_relevant, relevant_flags


def r_precision(ranked_ids: Sequence[str], grades: Mapping[str, int], threshold: int = 1) -> float:
    r = num_relevant(grades, threshold)
    if not r:
        return 0.0
    return sum(relevant_flags(ranked_ids, grades, threshold, r)) / r
