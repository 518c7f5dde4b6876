"""Evidence windows for the claim-support model: a chunk cut into short passages, and the
passages a claim is checked against.

- ``windows(chunk)``: the chunk's sentence-level units (``segment.context_units``) packed in order
  into passages of at most ``WINDOW_WORDS`` words; each window after the first starts with the
  previous window's last unit (one unit of overlap, so a fact split across a boundary is whole in
  one window). A unit longer than ``WINDOW_WORDS`` is its own window.
- ``overlap(claim_words, window)``: the share of the claim's content words (5-letter prefixes,
  so "elected"/"election" match) found in the window.
- ``ranked(claim, windows)``: window indices by decreasing ``overlap`` (ties: earlier first);
  ``scored`` gives each index with its overlap.

Training (bench/train_support_model.py) and inference use the same two functions, so the model
sees the same kind of passage in both. The best window counts (the way MiniCheck and SummaC
chunk long sources): a claim is as supported by a chunk as by the chunk's best window.
"""

from __future__ import annotations

from ragjudge.judges.offline.segment import context_units
from ragjudge.text import content_words

WINDOW_WORDS = 64
"""Most words in one evidence window (about 90 word pieces)."""


def windows(chunk: str, max_words: int = WINDOW_WORDS) -> list[str]:
    """The chunk as overlapping passages of at most ``max_words`` words (module docstring)."""
    units = context_units(chunk)
    out: list[str] = []
    i = 0
    while i < len(units):
        j, words = i, 0
        while j < len(units) and (j == i or words + len(units[j].split()) <= max_words):
            words += len(units[j].split())
            j += 1
        out.append(" ".join(units[i:j]))
        if j >= len(units):
            break
        i = j - 1 if j - 1 > i else j
    return out


def stems(text: str) -> set[str]:
    """Content words of ``text`` cut to their first five letters."""
    return {w[:5] for w in content_words(text)}


def overlap(claim_stems: set[str], window: str) -> float:
    """Share of ``claim_stems`` present in ``window`` (0.0 for a claim without content words)."""
    if not claim_stems:
        return 0.0
    return len(claim_stems & stems(window)) / len(claim_stems)


def scored(claim: str, passages: list[str]) -> list[tuple[int, float]]:
    """``(index, overlap)`` of ``passages`` by decreasing overlap with ``claim`` (stable)."""
    cs = stems(claim)
    scores = [overlap(cs, p) for p in passages]
    return sorted(enumerate(scores), key=lambda kv: -kv[1])


def ranked(claim: str, passages: list[str]) -> list[int]:
    """Indices of ``passages`` by decreasing overlap with ``claim`` (stable)."""
    return [k for k, _ in scored(claim, passages)]
