"""Answer relevancy (offline): does the answer address ALL of what was asked.

score = p(relevant) from the fitted ``relevancy`` model on ``features.relevancy_features``:
coverage of each question aspect (embedding) and of its expected answer type (a date for
"when", a name for "who", a number for "how many", a cause for "why"), question-term coverage,
informativeness (new content words), penalties for non-committal sentences, hedging and
off-topic sentences. Plain question-answer cosine favours short, incomplete answers; the aspect
and informativeness features are what reward a full answer.

A fragment answer ("Rollo" to "Who led the Normans?", "the 10th century"; ``segment.
terse_answer``) is read by the ``short_relevancy`` model instead, when the parameters have one
(``relevancy_model``): its expected answer type, its cosine to the question and the question
aspects it covers. The sentence features would call it off-topic and uninformative.

Abstentions: a wholly non-committal answer ("I don't know ...") scores 0, as with the LLM judge,
unless the reference itself says the question cannot be answered (then abstaining is the right
answer and scores 1; any other answer to such a question scores 0).
"""

from __future__ import annotations

from ragjudge.judges.offline.base import OfflineJudge
from ragjudge.judges.offline.features import relevancy_features, relevancy_texts
from ragjudge.judges.offline.params import Params
from ragjudge.judges.offline.segment import claims as segment_claims
from ragjudge.judges.offline.segment import is_non_committal, terse_answer
from ragjudge.judges.registry import register_judge
from ragjudge.schema import Evidence, JudgeInput, JudgeResult, JudgeStatus


def abstains(answer: str) -> bool:
    """The answer declines to answer and makes no claim."""
    return is_non_committal(answer) and not segment_claims(answer)


def unanswerable(reference: str | None) -> bool:
    """The reference says the question has no answer."""
    return bool(reference and reference.strip() and abstains(reference))


def relevancy_model(answer: str, params: Params) -> str:
    """The name of the model in ``params`` that rates ``answer``'s relevancy: ``short_relevancy``
    for a fragment answer (``segment.terse_answer``) when ``params`` has it, else
    ``relevancy``."""
    if "short_relevancy" in params.models and terse_answer(answer):
        return "short_relevancy"
    return "relevancy"


@register_judge("answer_relevancy", "offline")
class OfflineAnswerRelevancyJudge(OfflineJudge):
    name = "answer_relevancy"
    needs_contexts = False

    def texts(self, item: JudgeInput) -> list[str] | None:
        if unanswerable(item.reference):
            return []
        return relevancy_texts(item.question, item.answer)

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
        model = relevancy_model(item.answer, self.params)
        p = self.params.models[model].proba_dict(feats)
        weakest = min(("aspect_cov_min", "type_ok", "q_term_cov"), key=lambda f: feats[f])
        explanation = (
            f"p(relevant)={p:.2f}; aspects covered (mean cosine) {feats['aspect_cov_mean']:.2f}, "
            f"expected answer types present {feats['type_ok']:.0%}, "
            + (
                f"a fragment answer (question cosine {feats['qa_cos']:.2f})"
                if model == "short_relevancy"
                else f"non-committal sentences {feats['non_committal']:.0%}, off-topic "
                f"sentences {feats['off_topic']:.0%}"
            )
            + f"; weakest signal: {weakest}"
        )
        return self.result(
            item,
            JudgeStatus.ok,
            score=p,
            evidence=Evidence(explanation=explanation, features=feats),
        )
