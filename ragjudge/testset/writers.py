"""Question writers: make one candidate of a type from one or two passages.

``QuestionWriter`` is the seam: ``TemplateWriter`` (offline, ``templates``) and ``LLMWriter``
(one structured call of ``prompts/testset/generate`` through the LLM layer: cache, ledger,
retries and one repair call come from ``ragjudge.llm``). A writer never raises for a failed
call: it returns ``(None, reason)``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, Field

from ragjudge.prompts import ContextBudget, fit_contexts, load_prompt
from ragjudge.schema import Document

from . import templates
from .models import UNANSWERABLE_REFERENCE, Candidate

if TYPE_CHECKING:
    from ragjudge.judges.llm.base import StructuredClient


class QuestionWriter(Protocol):
    name: str
    """The generator recorded in each item's provenance (a model id, or offline-templates)."""
    prompts: list[str]
    """``name@version`` of the prompts it uses."""

    async def write(
        self, qtype: str, passages: Sequence[Document], rng: random.Random
    ) -> tuple[Candidate | None, str | None]:
        """A candidate, or None and why none was made (an LLM writer's reason is
        ``STATUS: message``, the failed call's status first)."""
        ...


class TemplateWriter:
    """Offline template questions (``ragjudge.testset.templates``)."""

    def __init__(self, context: templates.TemplateContext) -> None:
        self.context = context
        self.name = templates.OFFLINE_GENERATOR
        self.prompts: list[str] = []

    async def write(
        self, qtype: str, passages: Sequence[Document], rng: random.Random
    ) -> tuple[Candidate | None, str | None]:
        if len(passages) == 2:
            got = templates.two_passage(qtype, passages[0], passages[1], self.context, rng)
        else:
            got = templates.one_passage(qtype, passages[0], self.context, rng)
        return got, None if got is not None else "no template fits the passage"


class GeneratedQuestion(BaseModel):
    """The structured reply of ``testset/generate`` (its JSON schema is what is sent)."""

    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    short_answer: str


def _check(value: GeneratedQuestion) -> str | None:
    if len(value.question.split()) < 3:
        return "question: write a full question (at least three words)"
    if not value.answer.strip():
        return "answer: must not be empty"
    return None


class LLMWriter:
    """One structured call per candidate."""

    def __init__(
        self,
        client: StructuredClient,
        *,
        model: str,
        prompt: str = "testset/generate",
        budget: ContextBudget | None = None,
    ) -> None:
        self.client = client
        self.prompt = load_prompt(prompt)
        self.name = model
        self.prompts = [f"{self.prompt.name}@{self.prompt.version}"]
        self.budget = budget or ContextBudget()

    async def write(
        self, qtype: str, passages: Sequence[Document], rng: random.Random
    ) -> tuple[Candidate | None, str | None]:
        texts, _ = fit_contexts([d.text for d in passages], self.budget)
        messages = self.prompt.render(qtype=qtype, contexts=texts)
        res = await self.client.structured(
            messages,
            GeneratedQuestion,
            prompt=self.prompt.ref,
            tags={"testset": qtype, "item": "+".join(d.id for d in passages)},
            validate=_check,
        )
        if not res.ok or res.value is None:
            why = res.error
            return None, f"{why.kind}: {why.message}" if why is not None else "no value returned"
        v = res.value
        unanswerable = qtype == "unanswerable"
        return (
            Candidate(
                qtype=qtype,
                question=" ".join(v.question.split()),
                reference=UNANSWERABLE_REFERENCE if unanswerable else v.answer.strip(),
                short_answer="" if unanswerable else v.short_answer.strip(),
                sources=[d.id for d in passages],
                generator=self.name,
                prompt=self.prompts[0],
                usage=res.usage,
            ),
            None,
        )
