"""Completeness (LLM): which key points of the reference answer (or, with no reference, which
parts of the question) the answer covers, in one call.

score = (covered + 0.5 * partial) / key points, with the list as ``Evidence.key_points``
(verdicts covered / partial / missing stored as supported / partial / unsupported).
No key points at all is ``no_claims``. ``Evidence.features["uses_reference"]`` says which of
the two the key points came from.
"""

from __future__ import annotations

from typing import Literal

from ragjudge.judges.llm.base import VERDICT_SCORE, LLMJudge
from ragjudge.judges.llm.schemas import CompletenessOut
from ragjudge.judges.registry import register_judge
from ragjudge.schema import ClaimVerdict, Evidence, JudgeInput, JudgeResult, JudgeStatus

_AS_VERDICT: dict[str, Literal["supported", "partial", "unsupported"]] = {
    "covered": "supported",
    "partial": "partial",
    "missing": "unsupported",
}


@register_judge("completeness", "llm")
class CompletenessJudge(LLMJudge):
    name = "completeness"
    prompt_name = "judges/completeness"
    requires_reference = False
    needs_contexts = False

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        reference = (item.reference or "").strip() or None

        def validate(out: CompletenessOut) -> str | None:
            return None

        out, failure, usage, raw = await self.ask(
            item,
            CompletenessOut,
            validate,
            question=item.question,
            answer=item.answer,
            reference=reference,
        )
        if failure is not None or out is None:
            return failure or self.result(item, JudgeStatus.parse_error)
        points = [
            ClaimVerdict(claim=p.point, verdict=_AS_VERDICT[p.verdict]) for p in out.key_points
        ]
        evidence = Evidence(
            key_points=points, features={"uses_reference": float(reference is not None)}
        )
        if not points:
            return self.result(
                item,
                JudgeStatus.no_claims,
                evidence=evidence,
                usage=usage,
                raw=raw,
                error="no key points to cover",
            )
        score = sum(VERDICT_SCORE[p.verdict] for p in points) / len(points)
        return self.result(
            item, JudgeStatus.ok, score=score, evidence=evidence, usage=usage, raw=raw
        )
