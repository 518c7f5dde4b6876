"""Reciprocal rank = 1 / rank of the first document with grade >= t (0 if none in the top k).

With ``k=None`` the whole ranking counts (trec_eval's ``recip_rank``); the mean over queries
is MRR.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._common import relevant_flags


def reciprocal_rank(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int | None = None, threshold: int = 1
) -> float:
    for rank, rel in enumerate(relevant_flags(ranked_ids, grades, threshold, k), start=1):
        if rel:
            return 1.0 / rank
    return 0.0
