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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ragjudge.schema import Answer, Document, JudgeInput, JudgeResult, Ranking, TestCase


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
