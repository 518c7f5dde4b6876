"""Context recall and context precision (offline), both ``PrefixJudge``s.

- context recall: the reference's claims x the retrieved chunks, each cell the support
  probability of that claim by that chunk alone (``support.reference_support``: a short
  reference such as "France" must be the chunk's answer to the question) ->
  ``Evidence.support_matrix``; score = recall_at_k(M, k_max) (a claim is attributed when some
  chunk supports it with p >= 0.5). Needs a reference.
- context precision: each chunk's relevance p from the fitted ``chunk`` model on
  ``features.chunk_features`` (question-chunk cosine, question-term coverage, share of on-topic
  sentences, question-aspect coverage, and, with a reference, the best support of a reference
  claim by the chunk) -> ``Evidence.chunks``; score = average precision over the ranking.

Every cell and every chunk verdict depends on that chunk alone, so ``at_k(result, k)`` (via
``derive_at_k``) equals judging the first k contexts directly.
"""

from __future__ import annotations

from ragjudge.judges.offline.base import OfflineJudge
from ragjudge.judges.offline.features import chunk_features, chunk_texts
from ragjudge.judges.offline.support import claim_verdicts, reference_support, reference_texts
from ragjudge.judges.prefix import derive_at_k, precision_at_k, recall_at_k
from ragjudge.judges.registry import register_judge
from ragjudge.schema import ChunkVerdict, Evidence, JudgeInput, JudgeResult, JudgeStatus


class _Prefix:
    def at_k(self, result: JudgeResult, k: int) -> JudgeResult:
        """The result on the top-``k`` contexts, derived from the evidence at k_max."""
        return derive_at_k(result, k)


@register_judge("context_recall", "offline")
class OfflineContextRecallJudge(_Prefix, OfflineJudge):
    name = "context_recall"
    requires_reference = True
    needs_answer = False

    def texts(self, item: JudgeInput) -> list[str] | None:
        return reference_texts(
            item.reference or "", item.question, self.chunk_profiles(item), self.params
        )

    def _judge(self, item: JudgeInput) -> JudgeResult:
        points, sup = reference_support(
            item.reference or "", item.question, self.chunk_profiles(item), self.params, self.cache
        )
        if not points:
            return self.result(item, JudgeStatus.no_claims, error="the reference makes no claim")
        verdicts = claim_verdicts(points, sup.matrix, partial=False)
        rounded = [[round(float(v), 4) for v in row] for row in sup.matrix]
        return self.result(
            item,
            JudgeStatus.ok,
            score=recall_at_k(rounded, len(item.contexts)),
            evidence=Evidence(
                claims=verdicts, support_matrix=rounded, features=sup.best_features()
            ),
        )


@register_judge("context_precision", "offline")
class OfflineContextPrecisionJudge(_Prefix, OfflineJudge):
    name = "context_precision"
    needs_answer = False

    def texts(self, item: JudgeInput) -> list[str] | None:
        reference = (item.reference or "").strip()
        profiles = self.chunk_profiles(item)
        listed = (
            reference_texts(reference, item.question, profiles, self.params) if reference else []
        )
        if listed is None:
            return None
        return [*listed, *(t for c in profiles for t in chunk_texts(item.question, c))]

    def _judge(self, item: JudgeInput) -> JudgeResult:
        reference = (item.reference or "").strip()
        profiles = self.chunk_profiles(item)
        points: list[str] = []
        ref_support = None
        if reference:
            points, sup = reference_support(
                reference, item.question, profiles, self.params, self.cache
            )
            if points:
                ref_support = sup.matrix.max(axis=0)
        model = self.params.models["chunk"]
        chunks: list[ChunkVerdict] = []
        for j, chunk in enumerate(profiles):
            feats = chunk_features(
                item.question,
                chunk,
                self.cache,
                reference_support=None if ref_support is None else float(ref_support[j]),
            )
            p = model.proba_dict(feats)
            relevant = p >= 0.5
            chunks.append(
                ChunkVerdict(
                    index=j,
                    relevant=relevant,
                    confidence=round(p if relevant else 1.0 - p, 4),
                    rationale=f"p(relevant)={p:.2f}, question cosine {feats['q_cos_max']:.2f}, "
                    f"on-topic sentences {feats['rel_density']:.0%}",
                )
            )
        return self.result(
            item,
            JudgeStatus.ok,
            score=precision_at_k(chunks, len(chunks)),
            evidence=Evidence(chunks=chunks, features={"uses_reference": float(bool(points))}),
        )
