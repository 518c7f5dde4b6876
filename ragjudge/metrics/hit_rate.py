"""HitRate@k = 1 if any document in the top k has grade >= t, else 0 (trec_eval's ``success``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._common import relevant_flags


def hit_rate_at_k(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int, threshold: int = 1
) -> float:
    return 1.0 if any(relevant_flags(ranked_ids, grades, threshold, k)) else 0.0
