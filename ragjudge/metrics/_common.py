"""Argument checks shared by the per-metric functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def check_k(k: int | None) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"cut-off k must be a positive integer, got {k!r}")


def check_threshold(threshold: int) -> None:
    if threshold < 1:
        raise ValueError(
            f"relevance threshold must be >= 1 (unjudged documents have grade 0), got {threshold}"
        )


def relevant_flags(
    ranked_ids: Sequence[str], grades: Mapping[str, int], threshold: int, k: int | None = None
) -> list[bool]:
    """``[grade(d) >= threshold for d in ranked_ids[:k]]`` (unjudged documents have grade 0)."""
    check_k(k)
    check_threshold(threshold)
    top = ranked_ids if k is None else ranked_ids[:k]
    return [grades.get(d, 0) >= threshold for d in top]


def num_relevant(grades: Mapping[str, int], threshold: int) -> int:
    """R: the number of judged documents with grade >= threshold."""
    return sum(1 for g in grades.values() if g >= threshold)
