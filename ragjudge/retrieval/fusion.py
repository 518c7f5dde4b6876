"""Fusion of several rankings of one query into one.

- Reciprocal rank fusion (Cormack et al. 2009): score(d) = sum_i 1 / (k + rank_i(d)), rank from 1;
  a list that does not contain d adds nothing. Default k = 60.
- Normalised score fusion (CombSUM of min-max scores): score(d) = sum_i w_i * (s_i(d) - min_i) /
  (max_i - min_i), over each list's returned documents (a constant list maps to 1); absent -> 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragjudge.errors import ConfigError
from ragjudge.schema import Ranking

FUSIONS = ("rrf", "score")


def rrf(rankings: Sequence[Ranking], k: int = 60) -> dict[str, float]:
    if k < 0:
        raise ConfigError(f"rrf k must be >= 0, got {k}")
    out: dict[str, float] = {}
    for r in rankings:
        for rank, d in enumerate(r.docs, start=1):
            out[d.doc_id] = out.get(d.doc_id, 0.0) + 1.0 / (k + rank)
    return out


def minmax(rankings: Sequence[Ranking], weights: Sequence[float] | None = None) -> dict[str, float]:
    w = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(w) != len(rankings):
        raise ConfigError(f"need one weight per ranking, got {len(w)} for {len(rankings)}")
    out: dict[str, float] = {}
    for r, wi in zip(rankings, w, strict=True):
        if not r.docs:
            continue
        scores = [d.score for d in r.docs]
        lo, hi = min(scores), max(scores)
        for d in r.docs:
            norm = (d.score - lo) / (hi - lo) if hi > lo else 1.0
            out[d.doc_id] = out.get(d.doc_id, 0.0) + wi * norm
    return out
