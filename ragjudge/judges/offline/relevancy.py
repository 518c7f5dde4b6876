"""Answer relevancy (offline): does the answer address ALL of what was asked.

score = p(relevant) from the fitted ``relevancy`` model on ``features.relevancy_features``:
coverage of each question aspect (embedding) and of its expected answer type (a date for
"when", a name for "who", a number for "how many", a cause for "why"), question-term coverage,
informativeness (new content words), penalties for non-committal sentences, hedging and
off-topic sentences. Plain question-answer cosine favours short, incomplete answers; the aspect
and informativeness features are what reward a full answer.

Abstentions: a wholly non-committal answer ("I don't know ...") scores 0, as with the LLM judge,
unless the reference itself says the question cannot be answered (then abstaining is the right
answer and scores 1; any other answer to such a question scores 0).
"""

from __future__ import annotations

from ragjudge.judges.offline.base import OfflineJudge
from ragjudge.judges.offline.features import relevancy_features
from ragjudge.judges.offline.segment import claims as segment_claims
from ragjudge.judges.offline.segment import is_non_committal
from ragjudge.judges.registry import register_judge
from ragjudge.schema import Evidence, JudgeInput, JudgeResult, JudgeStatus


def abstains(answer: str) -> bool:
    """The answer declines to answer and makes no claim."""
    return is_non_committal(answer) and not segment_claims(answer)


def unanswerable(reference: str | None) -> bool:
    """The reference says the question has no answer."""
    return bool(reference and reference.strip() and abstains(reference))


@register_judge("answer_relevancy", "offline")
class OfflineAnswerRelevancyJudge(OfflineJudge):
    name = "answer_relevancy"
    needs_contexts = False

    def _judge(self, item: JudgeInput) -> JudgeResult:
        if unanswerable(item.reference):
            ok = abstains(item.answer)
            return self.result(
                item,
                JudgeStatus.ok,
                score=1.0 if ok else 0.0,
                evidence=Evidence(
                    explanation="the reference says the question cannot be answered; the answer "
                    + ("abstains (right)" if ok else "does not abstain (wrong)"),
                    features={"abstains": float(ok), "unanswerable": 1.0},
                ),
            )
        feats = relevancy_features(item.question, item.answer, self.cache)
        if abstains(item.answer):
            return self.result(
                item,
                JudgeStatus.ok,
                score=0.0,
                evidence=Evidence(explanation="non-committal answer", features=feats),
            )
        p = self.params.models["relevancy"].proba_dict(feats)
        weakest = min(("aspect_cov_min", "type_ok", "q_term_cov"), key=lambda f: feats[f])
        explanation = (
            f"p(relevant)={p:.2f}; aspects covered (mean cosine) {feats['aspect_cov_mean']:.2f}, "
            f"expected answer types present {feats['type_ok']:.0%}, non-committal sentences "
            f"{feats['non_committal']:.0%}, off-topic sentences {feats['off_topic']:.0%}; "
            f"weakest signal: {weakest}"
        )
        return self.result(
            item,
            JudgeStatus.ok,
            score=p,
            evidence=Evidence(explanation=explanation, features=feats),
        )
