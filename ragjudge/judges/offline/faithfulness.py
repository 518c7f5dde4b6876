"""Faithfulness (offline): the answer's claims, each judged against every chunk.

score = mean over the claims of the claim's support probability at its best chunk,
``mean_i max_j M[i][j]`` (``support.support_matrix``: the claim-support model by default), so
scores are continuous rather than tied at a few credit values. Each claim's verdict
(supported / partial / unsupported, ``support.claim_verdicts``) is in ``Evidence.claims``;
``Evidence.features["credit"]`` is the LLM judge's formula over those verdicts,
(supported + 0.5 * partial) / claims.

A short answer ("Rollo", "1844", "William the Conqueror": ``segment.short_answer``) is one claim,
read with its question (``Evidence.features["short_answer"]`` = 1). With the ``short_support``
model in the parameters and a question with a content word (``support.points_support``),
a chunk supports it when it gives it as the answer to that question
(``support.short_support``: the answer's words near the question's, in the unit that matches
the question best, of the kind the question asks for), so a name the chunk gives for something
else is not supported; without it, the question's words count as given and the chunk must
hold what the answer adds. An answer with no claim otherwise (only
questions, a bare yes / no, or a pure abstention such as "I don't know") is ``no_claims``:
there is nothing to be faithful about. Abstentions are scored by answer relevancy instead (see
that judge).
"""

from __future__ import annotations

from ragjudge.judges.offline.base import OfflineJudge
from ragjudge.judges.offline.segment import claims as segment_claims
from ragjudge.judges.offline.segment import is_non_committal, short_answer
from ragjudge.judges.offline.support import (
    VERDICT_CREDIT,
    claim_verdicts,
    points_support,
    points_texts,
)
from ragjudge.judges.registry import register_judge
from ragjudge.schema import Evidence, JudgeInput, JudgeResult, JudgeStatus


@register_judge("faithfulness", "offline")
class OfflineFaithfulnessJudge(OfflineJudge):
    name = "faithfulness"

    def texts(self, item: JudgeInput) -> list[str] | None:
        short, claims, _ = _claims(item)
        if not claims:
            return []
        return points_texts(short, claims, item.question, self.chunk_profiles(item), self.params)

    def _judge(self, item: JudgeInput) -> JudgeResult:
        short, claims, given = _claims(item)
        if not claims:
            why = "abstains" if is_non_committal(item.answer) else "makes no factual claim"
            return self.result(item, JudgeStatus.no_claims, error=f"the answer {why}")
        chunks = self.chunk_profiles(item)
        sup = points_support(
            short, claims, item.question, chunks, self.params, self.cache, given=given
        )
        verdicts = claim_verdicts(claims, sup.matrix)
        score = float(sup.matrix.max(axis=1).mean()) if sup.matrix.shape[1] else 0.0
        features = sup.best_features()
        features["credit"] = sum(VERDICT_CREDIT[v.verdict] for v in verdicts) / len(verdicts)
        features["n_claims"] = float(len(claims))
        if short is not None:
            features["short_answer"] = 1.0
        return self.result(
            item,
            JudgeStatus.ok,
            score=score,
            evidence=Evidence(claims=verdicts, features=features),
        )


def _claims(item: JudgeInput) -> tuple[str | None, list[str], str]:
    """The answer as a short answer (else None), its claims, and the text whose words count as
    given (the question, for a short answer)."""
    short = short_answer(item.answer)
    if short:
        return short, [short], item.question
    return None, segment_claims(item.answer), ""
