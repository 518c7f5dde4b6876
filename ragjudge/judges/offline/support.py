"""Claim support: the claims x chunks matrix of support probabilities and per-claim verdicts.

``M[i][j] = support.proba(support_features(claim_i, chunk_j))``: the fitted probability that
chunk j supports claim i, from that pair alone, capped by rules: at ``PARTIAL_CAP`` (partial)
when the chunk lacks some of the claim's numbers and dates (``features.quantities``) or some of
its names (``ent_miss`` > 0; that feature is also weighed), at ``UNSUPPORTED_CAP`` when it
lacks all of the claim's numbers and dates or flips its negation (``features.RULE_FEATURES``).
The decision threshold is folded into the model's intercept at fitting time, so ``M >= 0.5``
is the decision (the threshold ``ragjudge.judges.prefix`` uses). A claim's verdict uses its
best chunk:
``supported`` if max_j M >= 0.5, ``partial`` if it is in [PARTIAL_FLOOR, 0.5), else
``unsupported``; ``supporting_chunks`` are the chunks with M >= 0.5 (the best one for partial).
"""

from __future__ import annotations

import numpy as np

from ragjudge.judges.offline.embed import EmbeddingCache
from ragjudge.judges.offline.features import SUPPORT_FEATURES, TextProfile, support_features
from ragjudge.judges.offline.params import LogisticModel
from ragjudge.judges.prefix import SUPPORT_THRESHOLD
from ragjudge.schema import ClaimVerdict, Verdict

PARTIAL_FLOOR = 0.35
PARTIAL_CAP = 0.45
"""The most support a chunk can give a claim some of whose numbers, dates or names it lacks
(partial)."""
UNSUPPORTED_CAP = 0.3
"""The most support a chunk can give a claim whose numbers it all lacks or whose negation it
flips (unsupported: below ``PARTIAL_FLOOR``)."""
VERDICT_CREDIT = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}
"""Credit per verdict (the LLM judges' formula): score = mean credit."""


def support_matrix(
    claims: list[str],
    chunks: list[TextProfile],
    model: LogisticModel,
    cache: EmbeddingCache,
    *,
    given: frozenset[str] = frozenset(),
) -> tuple[np.ndarray, np.ndarray]:
    """(M, F): M is ``(claims, chunks)`` probabilities, F the ``(claims, chunks, features)``;
    ``given`` as in ``features.support_features``."""
    feats = np.zeros((len(claims), len(chunks), len(SUPPORT_FEATURES)))
    for j, chunk in enumerate(chunks):
        feats[:, j, :] = support_features(claims, chunk, cache, given=given)
    if not claims or not chunks:
        return np.zeros((len(claims), len(chunks))), feats
    probs = model.proba(feats.reshape(-1, len(SUPPORT_FEATURES))).reshape(len(claims), -1)
    num_miss = feats[:, :, SUPPORT_FEATURES.index("num_miss")]
    neg = feats[:, :, SUPPORT_FEATURES.index("neg_mismatch")]
    ent_miss = feats[:, :, SUPPORT_FEATURES.index("ent_miss")]
    cap = np.where((num_miss >= 1.0) | (neg > 0), UNSUPPORTED_CAP, PARTIAL_CAP)
    capped = (num_miss > 0) | (neg > 0) | (ent_miss > 0)
    return np.where(capped, np.minimum(probs, cap), probs), feats


def verdict(p: float, *, partial: bool = True) -> Verdict:
    if p >= SUPPORT_THRESHOLD:
        return "supported"
    if partial and p >= PARTIAL_FLOOR:
        return "partial"
    return "unsupported"


def claim_verdicts(
    claims: list[str], matrix: np.ndarray, *, partial: bool = True
) -> list[ClaimVerdict]:
    """One verdict per claim from its row of the support matrix (see the module docstring)."""
    out: list[ClaimVerdict] = []
    for i, claim in enumerate(claims):
        row = matrix[i] if matrix.shape[1] else np.zeros(0)
        best = float(row.max()) if row.size else 0.0
        v = verdict(best, partial=partial)
        chunks = [int(j) for j in np.flatnonzero(row >= SUPPORT_THRESHOLD)]
        if v == "partial":
            chunks = [int(np.argmax(row))]
        out.append(
            ClaimVerdict(
                claim=claim,
                verdict=v,
                supporting_chunks=chunks,
                confidence=round(best if v != "unsupported" else 1.0 - best, 4),
                rationale=f"best chunk {int(np.argmax(row))} at p={best:.2f}" if row.size else None,
            )
        )
    return out


def mean_features(feats: np.ndarray, matrix: np.ndarray) -> dict[str, float]:
    """Each support feature at each claim's best chunk, averaged over claims."""
    if feats.size == 0 or matrix.size == 0:
        return {}
    best = matrix.argmax(axis=1)
    rows = feats[np.arange(len(best)), best]
    return {f: round(float(v), 4) for f, v in zip(SUPPORT_FEATURES, rows.mean(axis=0), strict=True)}
