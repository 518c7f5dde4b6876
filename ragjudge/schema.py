"""Pydantic models at every boundary of ragjudge.

Data flows one way: ``TestSet`` -> ``Ranking`` (retriever) -> ``Answer`` (generator) ->
``JudgeResult`` (judges) -> run store -> aggregates. Every model here is what crosses a
module boundary; modules keep their own internals private.

Contract for scores: a ``JudgeResult`` has ``score`` in [0, 1] exactly when its ``status`` is
``ok``; every other status carries ``score=None`` and a reason. Aggregates count coverage
(scored / total) beside the mean, so no score is ever a silent NaN.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Frozen(BaseModel):
    """Base for immutable boundary records: unknown fields are errors, values are frozen."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# ----------------------------------------------------------------------------- data set


class Document(Frozen):
    """A retrievable unit. ``parent_id`` links a chunk to the document it was cut from."""

    id: str = Field(min_length=1)
    text: str
    title: str = ""
    parent_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def doc_id(self) -> str:
        """The document-level id: the parent's for a chunk, else the own id."""
        return self.parent_id or self.id


class TestCase(Frozen):
    """One test query: the question, an optional reference answer and graded relevance.

    ``relevant`` maps document id -> grade (0 = judged non-relevant, higher = more relevant;
    the demo set and most collections use 0..3). ``reference=None`` means no reference answer;
    an empty ``relevant`` with a reference of ``None`` marks a question the corpus cannot answer.
    """

    __test__ = False  # not a pytest class

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    reference: str | None = None
    relevant: dict[str, int] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


Qrels = dict[str, dict[str, int]]
"""Query id -> document id -> relevance grade (TREC qrels semantics)."""


class ScoredDoc(Frozen):
    doc_id: str
    score: float


class Ranking(Frozen):
    """The scored, ordered documents retrieved for one query (best first)."""

    query_id: str
    docs: list[ScoredDoc]

    @property
    def doc_ids(self) -> list[str]:
        return [d.doc_id for d in self.docs]

    def top(self, k: int) -> Ranking:
        """The prefix of length ``k``: retrieval at k is the prefix of retrieval at k_max."""
        return Ranking(query_id=self.query_id, docs=self.docs[:k])


Run = dict[str, dict[str, float]]
"""Query id -> document id -> score (TREC run semantics: higher is better)."""


class TestSet(BaseModel):
    """A corpus plus test cases. ``name`` and ``content_hash`` identify it in a run manifest."""

    __test__ = False

    model_config = ConfigDict(extra="forbid")

    name: str
    documents: list[Document]
    cases: list[TestCase]

    def qrels(self) -> Qrels:
        return {c.id: dict(c.relevant) for c in self.cases if c.relevant}

    def doc_index(self) -> dict[str, Document]:
        return {d.id: d for d in self.documents}


# ----------------------------------------------------------------------------- prompts, tokens


class PromptRef(Frozen):
    """Names a versioned prompt template; both parts enter cache keys and run manifests."""

    name: str
    version: str


class TokenUsage(Frozen):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    cost_usd: float = 0.0
    estimated: bool = False
    """True when any count is an offline estimate (the endpoint reported no usage)."""

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            calls=self.calls + other.calls,
            cached_calls=self.cached_calls + other.cached_calls,
            cost_usd=self.cost_usd + other.cost_usd,
            estimated=self.estimated or other.estimated,
        )


# ----------------------------------------------------------------------------- generation


class Answer(Frozen):
    """A generated answer with the contexts it saw (ranked, as given to the generator)."""

    case_id: str
    k: int = Field(ge=0)
    text: str
    context_ids: list[str]
    contexts: list[str]
    citations: list[int] = Field(default_factory=list)
    """Indices into ``contexts`` the answer cites."""
    abstained: bool = False
    generator: str
    prompt: PromptRef | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    error: str | None = None
    """Why generation failed (then ``text`` is empty); None for a generated answer."""


# ----------------------------------------------------------------------------- judging


class JudgeStatus(StrEnum):
    ok = "ok"
    no_claims = "no_claims"
    parse_error = "parse_error"
    timeout = "timeout"
    rate_limited = "rate_limited"
    provider_error = "provider_error"
    judge_error = "judge_error"
    """The judge's own code raised (a bug in it, not a failed call, unlike ``provider_error``:
    the LLM endpoint failed); the error names the exception and the file and line of the
    judge's code that raised it (``ragjudge.judges.runner.crashed``)."""
    refused = "refused"
    context_too_long = "context_too_long"
    skipped_missing_reference = "skipped_missing_reference"
    skipped_budget = "skipped_budget"
    invalid_input = "invalid_input"


class JudgeInput(Frozen):
    """What a judge sees: one question, one answer and the ranked contexts it was given."""

    id: str
    question: str
    answer: str
    contexts: list[str]
    context_ids: list[str] | None = None
    reference: str | None = None


Verdict = Literal["supported", "partial", "unsupported"]


class ClaimVerdict(Frozen):
    """Evidence for one atomic claim: whether the contexts support it and which chunk does."""

    claim: str
    verdict: Verdict
    supporting_chunks: list[int] = Field(default_factory=list)
    """0-based indices into the judged contexts."""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    rationale: str | None = None


class ChunkVerdict(Frozen):
    """Evidence for one retrieved chunk: is it relevant to the question and reference."""

    index: int = Field(ge=0)
    relevant: bool
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    rationale: str | None = None


class Evidence(Frozen):
    """Why a score is what it is. Judges fill the fields that apply to them.

    ``support_matrix[i][j]`` is the degree (0..1) to which context chunk ``j`` supports claim
    ``i`` (context recall judges reference claims against every chunk once, so recall at a
    smaller k is a prefix of the columns).
    """

    claims: list[ClaimVerdict] = Field(default_factory=list)
    chunks: list[ChunkVerdict] = Field(default_factory=list)
    key_points: list[ClaimVerdict] = Field(default_factory=list)
    support_matrix: list[list[float]] | None = None
    explanation: str | None = None
    features: dict[str, float] = Field(default_factory=dict)


class JudgeResult(Frozen):
    """One judge's verdict on one item. See the module docstring for the score contract."""

    judge: str
    judge_version: str
    backend: Literal["offline", "llm", "ragas", "custom"]
    item_id: str
    score: float | None
    status: JudgeStatus
    evidence: Evidence = Field(default_factory=Evidence)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    raw: str | None = None
    error: str | None = None

    @field_validator("score")
    @classmethod
    def _finite_unit(cls, v: float | None) -> float | None:
        if v is not None and (math.isnan(v) or not 0.0 <= v <= 1.0):
            raise ValueError(f"score must be a number in [0, 1] or None, got {v!r}")
        return v

    @model_validator(mode="after")
    def _score_iff_ok(self) -> JudgeResult:
        if (self.status == JudgeStatus.ok) != (self.score is not None):
            raise ValueError(
                f"status {self.status.value!r} with score {self.score!r}: a score is given "
                "exactly when the status is 'ok'"
            )
        return self


class SpendEstimate(Frozen):
    """What a judge expects to spend on some items, said before it spends
    (``ragjudge.protocols.SpendingJudge``): of ``items``, ``escalated`` go to a paid judge in
    ``calls`` calls of about ``prompt_tokens + completion_tokens`` tokens, ``cost_usd``."""

    judge: str
    items: int
    escalated: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float

    def describe(self) -> str:
        share = self.escalated / self.items if self.items else 0.0
        return (
            f"{self.judge}: {self.escalated} of {self.items} items ({share:.0%}) expected to "
            f"escalate to the LLM judge: {self.calls} calls, about "
            f"{self.prompt_tokens + self.completion_tokens} tokens, ${self.cost_usd:.4f}"
        )


# ----------------------------------------------------------------------------- aggregates


class Aggregate(Frozen):
    """``mean ± CI (n_scored / n_total)``; ``mean`` is None when nothing was scored."""

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n_scored: int
    n_total: int
    status_counts: dict[str, int] = Field(default_factory=dict)

    @property
    def coverage(self) -> float:
        return self.n_scored / self.n_total if self.n_total else 0.0


# ----------------------------------------------------------------------------- runs


class RunModels(Frozen):
    """The models a run used, one record written by the sweep and read by calibration (the
    manifest's ``models``): ``judge`` is the LLM behind the judges (None for offline judges),
    ``generator`` the LLM that wrote the answers (the generator's ``name@version`` when it is
    not an LLM), ``retriever`` the retrieval pipeline."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    retriever: str | None = None
    generator: str | None = None
    judge: str | None = None

    def as_dict(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class RunManifest(BaseModel):
    """What identifies a run: the data, the configuration and every versioned component."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    dataset_name: str
    dataset_hash: str
    config_hash: str
    config: dict[str, Any]
    ragjudge_version: str
    models: dict[str, str] = Field(default_factory=dict)
    prompts: dict[str, str] = Field(default_factory=dict)
    tags: dict[str, str] = Field(default_factory=dict)
    started_at: str
    finished_at: str | None = None
    status: Literal["running", "finished", "failed", "stopped_budget", "interrupted"] = "running"
    """``interrupted``: shown for a ``running`` run whose writer died (kill -9); resumable."""

    def used_models(self) -> RunModels:
        """``models`` as the typed record (a run stored with only ``llm`` recorded: that model
        is the judges' when they were LLM or ragas judges)."""
        models = dict(self.models)
        legacy = models.pop("llm", None)
        backend = self.config.get("full", {}).get("judges", {}).get("backend")
        if legacy and "judge" not in models and backend in ("llm", "ragas"):
            models["judge"] = legacy
        return RunModels.model_validate(models)
