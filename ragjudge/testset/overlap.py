"""The offline backend's check judge: lexical overlap, deterministic and independent of the
fitted offline judges (a ``Judge``, so the build asks the Protocol, never a backend name).

- claims: each sentence of the answer (the reference being checked) is ``supported`` by a
  context holding >= ``SUPPORTED`` of its content words and all of its numbers, ``partial``
  at >= ``PARTIAL`` (numbers still required), else ``unsupported``; score = (supported +
  0.5 partial) / claims, the LLM judges' formula;
- chunks: a context is ``relevant`` to the question when it holds >= ``RELEVANT`` of the
  question's content words (how an unanswerable question is checked against what BM25 finds).
"""

from __future__ import annotations

from ragjudge.schema import (
    ChunkVerdict,
    ClaimVerdict,
    Evidence,
    JudgeInput,
    JudgeResult,
    JudgeStatus,
)
from ragjudge.text import content_words, numbers, split_sentences

SUPPORTED = 0.7
PARTIAL = 0.4
RELEVANT = 0.8


def _share(words: set[str], text_words: set[str]) -> float:
    return len(words & text_words) / len(words) if words else 0.0


class OverlapJudge:
    name = "overlap_support"
    version = "v1"
    requires_reference = False
    backend = "offline"
    needs_answer = True
    needs_contexts = True

    async def judge(self, item: JudgeInput) -> JudgeResult:
        ctx_words = [set(content_words(c)) for c in item.contexts]
        ctx_numbers = [numbers(c) for c in item.contexts]
        claims: list[ClaimVerdict] = []
        for sent in split_sentences(item.answer):
            words, nums = set(content_words(sent)), numbers(sent)
            if not words:
                continue
            best, where = 0.0, -1
            for j, (cw, cn) in enumerate(zip(ctx_words, ctx_numbers, strict=True)):
                share = _share(words, cw) if nums <= cn else 0.0
                if share > best:
                    best, where = share, j
            verdict = (
                "supported"
                if best >= SUPPORTED
                else "partial"
                if best >= PARTIAL
                else "unsupported"
            )
            claims.append(
                ClaimVerdict(
                    claim=sent,
                    verdict=verdict,
                    supporting_chunks=[where] if verdict != "unsupported" else [],
                    confidence=round(best, 4),
                )
            )
        q = set(content_words(item.question))
        chunks = [
            ChunkVerdict(index=j, relevant=_share(q, cw) >= RELEVANT)
            for j, cw in enumerate(ctx_words)
        ]
        credit = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}
        score = sum(credit[c.verdict] for c in claims) / len(claims) if claims else None
        return JudgeResult(
            judge=self.name,
            judge_version=self.version,
            backend="custom",
            item_id=item.id,
            score=score,
            status=JudgeStatus.ok if claims else JudgeStatus.no_claims,
            evidence=Evidence(claims=claims, chunks=chunks),
        )
