"""Protocols for every pluggable part. Implement one to plug in your own; no subclassing needed.

Contracts:
- ``Retriever.retrieve(queries, k)`` returns one ``Ranking`` per query id, best first, at most
  ``k`` documents, no duplicate ids.
- ``Reranker.rerank(query, ranking, k)`` returns a re-ordered ranking of at most ``k`` of the
  given documents (it never adds a document the first stage did not return).
- ``Generator.generate(case, contexts, k)`` answers from exactly the contexts it is given.
- ``Judge.judge(item)`` never raises for a bad item or a failed call: it returns a
  ``JudgeResult`` with a typed status. A judge declares what it reads: ``needs_answer``,
  ``needs_contexts`` and ``requires_reference``; callers use these declarations (the shared
  pre-check ``ragjudge.judges.base.precheck`` before every call, the sweep's de-duplication of
  identical inputs), never the judge's name. ``backend`` is ``offline``, ``llm``, ``ragas`` or
  ``custom`` and is written on every result.
- ``PrefixJudge`` (a judge with ``at_k``) judges once at the largest k and derives the result
  at any smaller k from the prefix of its evidence (context recall and precision), at no
  further cost; the sweep treats every judge with ``at_k`` so, whatever its name.
- ``BatchedJudge`` (a judge with ``prepare``) does, for many items at once, work its ``judge``
  would otherwise do item by item (the offline judges encode every text of the items in one
  batch). ``prepare`` changes when the work is paid, not the results (the offline judges'
  scores move by the encoder's rounding only, which follows what shares a batch: under 1e-6 in
  fp32, about 1e-3 in bfloat16); every runner
  (``ragjudge.judges.runner.prepared_slices``) calls it on each slice of items before judging
  them.
- ``SpendingJudge`` (a judge with ``estimate_spend``) says before spending what judging some
  items will cost (the cascade: how many escalate to the LLM); a runner with a budget asks it
  first and stops before the first call when the estimate does not fit.

The sweep's own pluggable part, the ``Executor`` that carries out its plan, is a Protocol of
the sweep (``ragjudge.sweep.execute``): this vocabulary depends on nothing above it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ragjudge.schema import (
    Answer,
    Document,
    JudgeInput,
    JudgeResult,
    Ranking,
    SpendEstimate,
    TestCase,
)


@runtime_checkable
class Encoder(Protocol):
    """Maps texts to L2-normalised float32 vectors of shape (len(texts), dim)."""

    name: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class Retriever(Protocol):
    name: str

    def index(self, documents: Sequence[Document]) -> None: ...

    def retrieve(self, queries: Mapping[str, str], k: int) -> dict[str, Ranking]: ...


@runtime_checkable
class Reranker(Protocol):
    name: str

    def rerank(self, query: str, ranking: Ranking, k: int) -> Ranking: ...


@runtime_checkable
class Generator(Protocol):
    name: str
    version: str

    async def generate(self, case: TestCase, contexts: Sequence[Document], k: int) -> Answer: ...


@runtime_checkable
class Judge(Protocol):
    name: str
    version: str
    backend: str
    requires_reference: bool
    needs_answer: bool
    needs_contexts: bool

    async def judge(self, item: JudgeInput) -> JudgeResult: ...


@runtime_checkable
class PrefixJudge(Judge, Protocol):
    def at_k(self, result: JudgeResult, k: int) -> JudgeResult: ...


@runtime_checkable
class CappedJudge(Judge, Protocol):
    input_cap: tuple[int, int]
    """(most characters of one text, of all contexts together) the judge reads: the runners
    cut a longer item (``ragjudge.judges.items.cap_item``) and record the cut in its result."""


@runtime_checkable
class BatchedJudge(Judge, Protocol):
    def prepare(self, items: Sequence[JudgeInput]) -> None:
        """Do now, in batches, the work ``judge`` would do for ``items``: afterwards
        ``judge(item)`` returns what it would have returned without it (up to float rounding),
        only sooner."""
        ...


@runtime_checkable
class SpendingJudge(Judge, Protocol):
    async def estimate_spend(self, items: Sequence[JudgeInput]) -> SpendEstimate:
        """Before spending: how many of ``items`` it will send to a paid judge, in how many
        calls, at what estimated cost (the judge cascade, ``ragjudge.judges.cascade``). Runners
        with a budget check it before the first call."""
        ...

    async def spends(self, item: JudgeInput) -> bool:
        """Whether judging ``item`` may send a paid call (the cascade: whether the item
        escalates). Runners with a budget admit only such items against it: one the judge
        decides without a call never waits for, nor is refused by, a budget."""
        ...
