"""Context recall and context precision at every k from one judgement at the largest k.

Both judges only look at the reference, the question and the ranked contexts, so the verdicts at
k_max contain the verdicts at every smaller k:

- context recall@k = (1/|C|) * sum_i [max_{j<k} M[i][j] >= t], where M is the claim x chunk
  support matrix (reference claims x retrieved chunks) and t = 0.5.
- context precision@k = AP over the first k chunks: sum_{j<k} rel_j * P@(j+1) / sum_{j<k} rel_j
  (0 when no chunk in the top k is relevant), the rank-weighted precision ragas also uses.
"""

from __future__ import annotations

from ragjudge.schema import ChunkVerdict, JudgeResult, JudgeStatus

SUPPORT_THRESHOLD = 0.5


def recall_at_k(matrix: list[list[float]], k: int, threshold: float = SUPPORT_THRESHOLD) -> float:
    if not matrix:
        raise ValueError("recall of no claims")
    attributed = sum(1 for row in matrix if any(v >= threshold for v in row[:k]))
    return attributed / len(matrix)


def precision_at_k(chunks: list[ChunkVerdict], k: int) -> float:
    ordered = sorted(chunks, key=lambda c: c.index)[:k]
    hits = 0
    total = 0.0
    for rank, chunk in enumerate(ordered, start=1):
        if chunk.relevant:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


def derive_at_k(result: JudgeResult, k: int) -> JudgeResult:
    """The result a judge would have given on the top-``k`` prefix of the contexts.

    Non-ok results are returned unchanged (the failure applies at every k).
    """
    if result.status != JudgeStatus.ok:
        return result
    ev = result.evidence
    if ev.support_matrix is not None:
        matrix = [row[:k] for row in ev.support_matrix]
        claims = [
            c.model_copy(
                update={
                    "supporting_chunks": [j for j in c.supporting_chunks if j < k],
                    "verdict": "supported"
                    if any(v >= SUPPORT_THRESHOLD for v in matrix[i])
                    else "unsupported",
                }
            )
            for i, c in enumerate(ev.claims)
        ]
        score = recall_at_k(ev.support_matrix, k)
        evidence = ev.model_copy(update={"support_matrix": matrix, "claims": claims})
    elif ev.chunks:
        chunks = [c for c in ev.chunks if c.index < k]
        score = precision_at_k(ev.chunks, k)
        evidence = ev.model_copy(update={"chunks": chunks})
    else:
        raise ValueError(
            f"{result.judge}: evidence has neither a support matrix nor chunk verdicts"
        )
    return result.model_copy(update={"score": score, "evidence": evidence})
