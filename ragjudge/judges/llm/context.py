"""Context recall and context precision (LLM), each ONE call for the whole ranked list.

- context recall: the reference split into atomic claims, each claim judged against every
  context separately -> ``Evidence.support_matrix`` (claims x contexts, 1.0 = supports);
  score = recall_at_k(matrix, k_max). Needs a reference.
- context precision: a relevance verdict for every context -> ``Evidence.chunks``;
  score = average precision over the ranking (``precision_at_k``). Uses the reference when
  there is one, else judges relevance to the question alone.

Both are ``PrefixJudge``s: ``at_k(result, k)`` derives the result on the top-k prefix from the
evidence judged at k_max (``ragjudge.judges.prefix.derive_at_k``), at no further cost.
"""

from __future__ import annotations

from ragjudge.judges.llm.base import LLMJudge, check_chunk_ids
from ragjudge.judges.llm.schemas import (
    ContextPrecisionOut,
    ContextRecallOut,
    context_precision_out,
    context_recall_out,
)
from ragjudge.judges.prefix import derive_at_k, precision_at_k, recall_at_k
from ragjudge.judges.registry import register_judge
from ragjudge.schema import (
    ChunkVerdict,
    ClaimVerdict,
    Evidence,
    JudgeInput,
    JudgeResult,
    JudgeStatus,
)


class _PrefixMixin:
    def at_k(self, result: JudgeResult, k: int) -> JudgeResult:
        """The result on the top-``k`` contexts, derived from the evidence at k_max."""
        return derive_at_k(result, k)


@register_judge("context_recall", "llm")
class ContextRecallJudge(_PrefixMixin, LLMJudge):
    name = "context_recall"
    prompt_name = "judges/context_recall"
    requires_reference = True
    needs_answer = False

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        contexts, features = self.contexts(item)
        n = len(contexts)

        def validate(out: ContextRecallOut) -> str | None:
            for i, c in enumerate(out.claims, start=1):
                err = check_chunk_ids(c.chunks, n, f"claim {i}")
                if err:
                    return err
            return None

        out, failure, usage, raw = await self.ask(
            item,
            context_recall_out(n),
            validate,
            question=item.question,
            reference=item.reference,
            contexts=contexts,
        )
        if failure is not None or out is None:
            return failure or self.result(item, JudgeStatus.parse_error)
        matrix = [[1.0 if j + 1 in c.chunks else 0.0 for j in range(n)] for c in out.claims]
        claims = [
            ClaimVerdict(
                claim=c.claim,
                verdict="supported" if c.chunks else "unsupported",
                supporting_chunks=sorted({j - 1 for j in c.chunks}),
            )
            for c in out.claims
        ]
        evidence = Evidence(claims=claims, support_matrix=matrix, features=features)
        if not claims:
            return self.result(
                item,
                JudgeStatus.no_claims,
                evidence=evidence,
                usage=usage,
                raw=raw,
                error="the reference makes no claim",
            )
        return self.result(
            item,
            JudgeStatus.ok,
            score=recall_at_k(matrix, n),
            evidence=evidence,
            usage=usage,
            raw=raw,
        )


@register_judge("context_precision", "llm")
class ContextPrecisionJudge(_PrefixMixin, LLMJudge):
    name = "context_precision"
    prompt_name = "judges/context_precision"
    requires_reference = False
    needs_answer = False

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        contexts, features = self.contexts(item)
        n = len(contexts)
        reference = (item.reference or "").strip() or None

        def validate(out: ContextPrecisionOut) -> str | None:
            ids = [c.id for c in out.chunks]
            err = check_chunk_ids(ids, n, "chunks")
            if err:
                return err
            missing = sorted(set(range(1, n + 1)) - set(ids))
            if missing or len(ids) != len(set(ids)):
                return f"need exactly one verdict per context 1..{n}; missing {missing}"
            return None

        out, failure, usage, raw = await self.ask(
            item,
            context_precision_out(n),
            validate,
            question=item.question,
            reference=reference,
            contexts=contexts,
        )
        if failure is not None or out is None:
            return failure or self.result(item, JudgeStatus.parse_error)
        chunks = sorted(
            (ChunkVerdict(index=c.id - 1, relevant=c.relevant) for c in out.chunks),
            key=lambda c: c.index,
        )
        features["uses_reference"] = float(reference is not None)
        evidence = Evidence(chunks=chunks, features=features)
        return self.result(
            item,
            JudgeStatus.ok,
            score=precision_at_k(chunks, n),
            evidence=evidence,
            usage=usage,
            raw=raw,
        )
