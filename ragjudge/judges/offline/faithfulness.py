"""Faithfulness (offline): the answer's claims, each judged against every chunk.

score = (supported + 0.5 * partial) / claims, the LLM judge's formula, with each claim's
verdict from its best chunk (``support.claim_verdicts``). ``Evidence.features["mean_support"]``
is the mean support probability (a finer-grained score for ranking).

An answer with no claim sentences (only questions, fragments, or a pure abstention such as
"I don't know") is ``no_claims``: there is nothing to be faithful about. Abstentions are scored
by answer relevancy instead (see that judge).
"""

from __future__ import annotations

from ragjudge.judges.offline.base import OfflineJudge
from ragjudge.judges.offline.segment import claims as segment_claims
from ragjudge.judges.offline.segment import is_non_committal
from ragjudge.judges.offline.support import (
    VERDICT_CREDIT,
    claim_verdicts,
    mean_features,
    support_matrix,
)
from ragjudge.judges.registry import register_judge
from ragjudge.schema import Evidence, JudgeInput, JudgeResult, JudgeStatus


@register_judge("faithfulness", "offline")
class OfflineFaithfulnessJudge(OfflineJudge):
    name = "faithfulness"

    def _judge(self, item: JudgeInput) -> JudgeResult:
        claims = segment_claims(item.answer)
        if not claims:
            why = "abstains" if is_non_committal(item.answer) else "makes no factual claim"
            return self.result(item, JudgeStatus.no_claims, error=f"the answer {why}")
        matrix, feats = support_matrix(
            claims, self.chunk_profiles(item), self.params.models["support"], self.cache
        )
        verdicts = claim_verdicts(claims, matrix)
        score = sum(VERDICT_CREDIT[v.verdict] for v in verdicts) / len(verdicts)
        features = mean_features(feats, matrix)
        features["mean_support"] = round(float(matrix.max(axis=1).mean()), 4)
        features["n_claims"] = float(len(claims))
        return self.result(
            item,
            JudgeStatus.ok,
            score=score,
            evidence=Evidence(claims=verdicts, features=features),
        )
