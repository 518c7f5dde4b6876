"""Faithfulness (LLM): the answer split into atomic claims and each claim judged against the
numbered contexts, in ONE call (ragas needs two: extraction, then verdicts).

score = (supported + 0.5 * partial) / claims; an answer without factual claims is
``no_claims``. Validation: every context id exists and every supported or partial claim names
at least one supporting context.
"""

from __future__ import annotations

from ragjudge.judges.llm.base import VERDICT_SCORE, LLMJudge, check_chunk_ids
from ragjudge.judges.llm.schemas import FaithfulnessOut, faithfulness_out
from ragjudge.judges.registry import register_judge
from ragjudge.schema import ClaimVerdict, Evidence, JudgeInput, JudgeResult, JudgeStatus


@register_judge("faithfulness", "llm")
class FaithfulnessJudge(LLMJudge):
    name = "faithfulness"
    prompt_name = "judges/faithfulness"
    requires_reference = False

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        contexts, features = self.contexts(item)
        n = len(contexts)

        def validate(out: FaithfulnessOut) -> str | None:
            for i, c in enumerate(out.claims, start=1):
                err = check_chunk_ids(c.chunks, n, f"claim {i}")
                if err:
                    return err
                if c.verdict != "unsupported" and not c.chunks:
                    return f"claim {i} is {c.verdict} but names no supporting context id"
            return None

        out, failure, usage, raw = await self.ask(
            item,
            faithfulness_out(n),
            validate,
            question=item.question,
            answer=item.answer,
            contexts=contexts,
        )
        if failure is not None or out is None:
            return failure or self.result(item, JudgeStatus.parse_error)
        claims = [
            ClaimVerdict(
                claim=c.claim,
                verdict=c.verdict,
                supporting_chunks=sorted({j - 1 for j in c.chunks})
                if c.verdict != "unsupported"
                else [],
            )
            for c in out.claims
        ]
        evidence = Evidence(claims=claims, features=features)
        if not claims:
            return self.result(
                item,
                JudgeStatus.no_claims,
                evidence=evidence,
                usage=usage,
                raw=raw,
                error="the answer makes no factual claim",
            )
        score = sum(VERDICT_SCORE[c.verdict] for c in claims) / len(claims)
        return self.result(
            item, JudgeStatus.ok, score=score, evidence=evidence, usage=usage, raw=raw
        )
