"""What test-set generation produces: candidates with their provenance, the filter report and
the result of a build."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ragjudge.schema import TestSet, TokenUsage

FILTERS = ("form", "copy", "leak", "duplicate", "source_check")
"""The filters, in the order they run (cheapest first):

- ``form``: not a question a person would ask (``filters.form_problem``: not one question
  ending in "?", markup, a file name or a document id in it, a word twice in a row ...);
- ``copy``: the question copies a sentence of its source passages;
- ``leak``: the question alone answers itself (every term of the short answer is in it; not
  applied to comparisons, whose answer is one of the two things they name, nor to
  unanswerable questions);
- ``duplicate``: a near-duplicate (embedding cosine >= threshold) of a question already kept;
- ``source_check``: a judge call. An answerable question's reference must be supported by its
  source passages (support judge score >= threshold); an unanswerable question must not be
  answered by any of the passages a BM25 retriever finds for it (context-relevance judge)."""

OFFLINE_GENERATOR = "offline-templates"
TEMPLATE_NOTE = (
    "template questions: built by fixed patterns from passage sentences (numbers, names, "
    "definitions, causes, lists), not written by a language model; they are easier and less "
    "varied than real users' questions"
)
UNANSWERABLE_REFERENCE = "The corpus does not contain the answer to this question."
"""Reference of every unanswerable question (the offline judges read it as an abstention)."""


class Candidate(BaseModel):
    """One generated question before filtering."""

    qtype: str
    question: str
    reference: str
    short_answer: str = ""
    """The answer's key (a number, a name, list items); the leak filter checks it."""
    sources: list[str]
    """Ids of the passages the question was made from."""
    generator: str
    """The model id, or ``offline-templates``."""
    prompt: str | None = None
    """``name@version`` of the generation prompt (LLM backend)."""
    template: str | None = None
    """The offline template used."""
    scores: dict[str, float] = Field(default_factory=dict)
    usage: TokenUsage = Field(default_factory=TokenUsage)


class Item(BaseModel):
    """A kept question with its graded relevance."""

    id: str
    candidate: Candidate
    relevant: dict[str, int]
    """Passage id -> grade: 3 a source, 2 another passage supporting the whole reference,
    1 one supporting part of it. Empty for an unanswerable question."""

    def query_row(self) -> dict[str, Any]:
        """The ``queries.jsonl`` row (``reference`` and provenance in ``metadata``)."""
        c = self.candidate
        return {
            "_id": self.id,
            "text": c.question,
            "reference": c.reference,
            "metadata": {
                "type": c.qtype,
                "answerable": c.qtype != "unanswerable",
                "short_answer": c.short_answer,
                "sources": c.sources,
                "generator": c.generator,
                "prompt": c.prompt,
                "template": c.template,
                "filter_scores": {k: round(v, 4) for k, v in sorted(c.scores.items())},
            },
        }


class FilterReport(BaseModel):
    """How many candidates were generated, failed, removed by each filter and kept, per type."""

    requested: dict[str, int] = Field(default_factory=dict)
    generated: dict[str, int] = Field(default_factory=dict)
    failed: dict[str, int] = Field(default_factory=dict)
    """Candidates that could not be made (no template fits the passage; an LLM call failed)."""
    removed: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Filter -> type -> count."""
    kept: dict[str, int] = Field(default_factory=dict)
    unused: dict[str, int] = Field(default_factory=dict)
    """Candidates that passed every filter after the type's quota was full."""
    judge_errors: int = 0
    """Source checks whose judge call failed (their candidates count under source_check)."""

    def add(
        self, field: Literal["generated", "failed", "kept", "requested", "unused"], qtype: str
    ) -> None:
        counts: dict[str, int] = getattr(self, field)
        counts[qtype] = counts.get(qtype, 0) + 1

    def remove(self, name: str, qtype: str) -> None:
        by = self.removed.setdefault(name, {})
        by[qtype] = by.get(qtype, 0) + 1


class Manifest(BaseModel):
    """``testset.json``: how the set was made."""

    ragjudge_version: str
    corpus: str
    backend: Literal["offline", "llm"]
    generator: str
    prompts: list[str]
    """``name@version`` of every prompt called (LLM backend: the writer's and the judges')."""
    judges: dict[str, str]
    """Role (``support``, ``relevance``) -> ``name@version`` of the judge used."""
    seed: int
    n_requested: int
    mix: dict[str, float]
    thresholds: dict[str, float]
    report: FilterReport
    status: Literal["finished", "stopped_budget"]
    usage: TokenUsage
    notes: list[str] = Field(default_factory=list)


class TestsetBuild(BaseModel):
    """The result of ``build_testset``: the test set (what the sweep takes), its items and
    manifest, and the folder it was written to."""

    __test__ = False  # not a pytest class

    testset: TestSet
    items: list[Item]
    manifest: Manifest
    path: str | None = None
