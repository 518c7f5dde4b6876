"""Criteria judge: a check written in plain words ("Is the answer polite?", "Does it cite a
source for every figure?"), judged by one structured LLM call per item.

The model answers ``yes`` / ``partly`` / ``no`` with a one-sentence explanation and up to three
spans of the answer, copied verbatim, that the verdict rests on; a quote that is not in the
answer fails validation (one repair call, then ``parse_error``). score = 1 for yes, 0.5 for
partly, 0 for no. Evidence: the explanation, and each quote as a ``ClaimVerdict`` carrying the
verdict (yes -> supported, partly -> partial, no -> unsupported).

``needs`` says what the prompt shows besides the question: the answer (always), the contexts
(``"contexts"``) and the reference (``"reference"``, which then is required). The version is
the prompt's plus a digest of the criterion and ``needs``, so a changed rubric is a changed
judge (new cache keys, a new sweep run). Usable from Python (``CriteriaJudge(name, criterion)``)
and from a sweep config (``judges: {criteria: {polite: "Is the answer polite?"}}``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Literal

from ragjudge.errors import ConfigError
from ragjudge.judges.base import NEEDS, needs_of
from ragjudge.judges.llm.base import LLMJudge, StructuredClient
from ragjudge.judges.llm.schemas import CriteriaOut
from ragjudge.prompts import ContextBudget
from ragjudge.schema import ClaimVerdict, Evidence, JudgeInput, JudgeResult, JudgeStatus

SCORE = {"yes": 1.0, "partly": 0.5, "no": 0.0}
_AS_VERDICT: dict[str, Literal["supported", "partial", "unsupported"]] = {
    "yes": "supported",
    "partly": "partial",
    "no": "unsupported",
}


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


class CriteriaJudge(LLMJudge):
    prompt_name = "judges/criteria"

    def __init__(
        self,
        name: str,
        criterion: str,
        *,
        needs: Iterable[str] = ("answer",),
        client: StructuredClient | None = None,
        prompt: str | None = None,
        budget: ContextBudget | None = None,
    ) -> None:
        super().__init__(client, prompt=prompt, budget=budget)
        wanted = needs_of(needs) | {"answer"}
        if wanted - NEEDS:
            raise ConfigError(
                f"criteria judge {name!r}: unknown needs {sorted(wanted - NEEDS)}; "
                f"use {sorted(NEEDS)}"
            )
        if not name or not criterion.strip():
            raise ConfigError("a criteria judge needs a name and a non-empty criterion")
        self.name = name
        self.criterion = criterion.strip()
        self.needs_contexts = "contexts" in wanted
        self.requires_reference = "reference" in wanted
        digest = hashlib.sha256(json.dumps([self.criterion, sorted(wanted)]).encode()).hexdigest()[
            :8
        ]
        self.version = f"{self.prompt.version}+{digest}"

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        answer = _norm(item.answer)

        def validate(out: CriteriaOut) -> str | None:
            missing = [q for q in out.quotes if _norm(q) not in answer]
            if missing:
                return f"quotes not found verbatim in the answer: {missing}"
            return None

        contexts = self.contexts(item)[0] if self.needs_contexts else []
        out, failure, usage, raw = await self.ask(
            item,
            CriteriaOut,
            validate,
            criterion=self.criterion,
            question=item.question,
            answer=item.answer,
            reference=item.reference if self.requires_reference else None,
            contexts=contexts,
        )
        if failure is not None or out is None:
            return failure or self.result(item, JudgeStatus.parse_error)
        verdict = _AS_VERDICT[out.verdict]
        evidence = Evidence(
            explanation=out.explanation,
            claims=[ClaimVerdict(claim=q, verdict=verdict) for q in out.quotes],
        )
        return self.result(
            item, JudgeStatus.ok, score=SCORE[out.verdict], evidence=evidence, usage=usage, raw=raw
        )
