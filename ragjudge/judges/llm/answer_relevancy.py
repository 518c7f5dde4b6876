"""Answer relevancy (LLM): does the answer address the question that was asked, in one call.

The model grades a rubric 0..3 (3 = answers every part directly, 2 = main part only or much
unrelated material, 1 = mostly off-topic, 0 = off-topic or non-committal) and flags
non-committal answers; score = rubric / 3, and 0 for a non-committal answer (as ragas does).
The explanation is kept as evidence. Correctness is not judged here (faithfulness does that).
"""

from __future__ import annotations

from ragjudge.judges.llm.base import LLMJudge
from ragjudge.judges.llm.schemas import RelevancyOut
from ragjudge.judges.registry import register_judge
from ragjudge.schema import Evidence, JudgeInput, JudgeResult, JudgeStatus


@register_judge("answer_relevancy", "llm")
class AnswerRelevancyJudge(LLMJudge):
    name = "answer_relevancy"
    prompt_name = "judges/answer_relevancy"
    requires_reference = False
    needs_contexts = False

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        def validate(out: RelevancyOut) -> str | None:
            return None if out.explanation.strip() else "the explanation is empty"

        out, failure, usage, raw = await self.ask(
            item, RelevancyOut, validate, question=item.question, answer=item.answer
        )
        if failure is not None or out is None:
            return failure or self.result(item, JudgeStatus.parse_error)
        score = 0.0 if out.noncommittal else out.score / 3
        evidence = Evidence(
            explanation=out.explanation,
            features={"rubric": float(out.score), "noncommittal": float(out.noncommittal)},
        )
        return self.result(
            item, JudgeStatus.ok, score=score, evidence=evidence, usage=usage, raw=raw
        )
