"""The worker actor: the parts of a job built once per worker, then batches of queries,
answers to generate or items to judge, each returned to the driver (never stored here).

``Parts`` is what a worker runs; a picklable factory builds it on the worker (``sweep_parts``
for a sweep, ``judge_parts`` for ``ragjudge judge``, ``retriever_parts`` for ``ragjudge
retrieval``), so no model or connection crosses the network. A worker indexes the documents it
was given on its first retrieval batch, reading the vectors the driver encoded from the
content-hash cache it was seeded with (``seed_vectors``). Each batch returns its ledger entries
with its rows: the driver records them in the run's ledger.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragjudge.distributed import require_ray
from ragjudge.llm.limiter import use_gate
from ragjudge.llm.opencache import use_cache
from ragjudge.protocols import Generator, Judge
from ragjudge.schema import Answer, Document, JudgeInput, JudgeResult, Ranking, TestCase

ray = require_ray()


@dataclass
class Parts:
    """What one worker runs (any part may be absent for a job that does not need it)."""

    retriever: Any = None
    generator: Generator | None = None
    judges: dict[str, Judge] = field(default_factory=dict)
    ledger: Any = None
    """The ``Ledger`` the LLM clients of the parts share (its entries go back to the driver)."""
    custom: frozenset[str] = frozenset()
    """The roles of the parts the user supplied (``Components.custom``'s keys: ``retriever``,
    ...): an exception of theirs is blamed on them (``ragjudge.sweep.execute.blaming``)."""


def sweep_parts(config: Any) -> Parts:
    """The retriever, generator and judges a ``SweepConfig`` names."""
    from ragjudge.judges.base import conform
    from ragjudge.sweep.components import build_components

    comp = build_components(config)
    judges = [conform(j) for j in comp.judges]
    ledger = comp.llm.ledger if comp.llm is not None else None
    judged = {j.name: j for j in judges}
    return Parts(comp.retriever, comp.generator, judged, ledger, frozenset(comp.custom))


def judge_parts(
    names: Sequence[str],
    backend: str,
    plugins: Sequence[str],
    options: Mapping[str, Any] | None = None,
) -> Parts:
    """The named judges of ``backend`` (after importing the plugin modules), by those names."""
    from ragjudge.judges.base import conform
    from ragjudge.judges.registry import build_judges, import_plugins

    import_plugins(list(plugins))
    judges = build_judges(list(names), backend, options=options)
    return Parts(judges={n: conform(j) for n, j in zip(names, judges, strict=True)})


def retriever_parts(build: Callable[[], Any]) -> Parts:
    """A retriever (pipeline) from ``build()``."""
    return Parts(retriever=build())


def dense_parts(retriever: Any) -> list[Any]:
    """The ``DenseRetriever`` stages inside ``retriever`` (a pipeline, hybrid, or one)."""
    from ragjudge.retrieval.dense import DenseRetriever

    if isinstance(retriever, DenseRetriever):
        return [retriever]
    found: list[Any] = []
    for attr in ("retriever", "dense", "sparse"):
        part = getattr(retriever, attr, None)
        if part is not None:
            found += dense_parts(part)
    return found


def seed_vectors(vectors: Mapping[str, Mapping[str, np.ndarray]]) -> None:
    """Write ``{encoder name: {content hash: vector}}`` into this machine's vector caches
    (only the hashes they lack)."""
    from ragjudge.retrieval.cache import VectorCache

    for model, by_hash in vectors.items():
        cache = VectorCache(model)
        have = cache.get_many(list(by_hash))
        cache.put_many({h: v for h, v in by_hash.items() if h not in have})
        cache.close()


@ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=-1)
class Worker:
    """One worker: ``env`` (the driver's LLM variables) set; ``concurrency`` items in flight
    per batch. Every call brings ``shared``, a list holding one object ref to ``(build,
    documents, gate, cache)`` that the pool keeps alive; the first call of a (re)started worker
    installs the cluster's gate and cache and builds ``build()``'s parts from it.

    The ref travels with the calls, not the constructor: Ray's core worker writes an error
    line on stderr for an actor that may restart and whose constructor arguments hold object
    refs (or actor handles), and a restarted worker gets its parts from the next call anyway."""

    def __init__(self, env: Mapping[str, str], concurrency: int) -> None:
        os.environ.update(env)
        self.concurrency = concurrency
        self._parts: Parts | None = None
        self.documents: list[Document] = []
        self.docs: dict[str, Document] = {}
        self.indexed = False
        self.entries: list[Any] = []
        self._building = asyncio.Lock()

    async def _ready(self, shared: list[Any]) -> Parts:
        async with self._building:  # the calls in flight on this worker build the parts once
            if self._parts is not None:
                return self._parts
            build, documents, gate, cache = await shared[0]
            if gate is not None:
                use_gate(gate)
            if cache is not None:
                use_cache(cache)
            parts: Parts = build()
            self.documents = list(documents)
            self.docs = {d.id: d for d in self.documents}
            if parts.ledger is not None:
                parts.ledger.subscribe(self.entries.append)
            self._parts = parts
            return parts

    def _drain(self) -> list[Any]:
        out, self.entries[:] = list(self.entries), []
        return out

    async def retrieve(
        self,
        shared: list[Any],
        queries: Mapping[str, str],
        k: int,
        vectors: Mapping[str, Mapping[str, np.ndarray]],
    ) -> tuple[dict[str, Ranking], str | None]:
        """The rankings of ``queries`` at ``k`` and the reranking failure, if any (the index
        built on the first call, from ``vectors`` for the dense stages). A retriever whose code
        (the user's) raises is a ``UserCodeError`` naming where, as in process."""
        from ragjudge.sweep.execute import blaming, retriever_part
        from ragjudge.sweep.stages import reranking_failure

        parts = await self._ready(shared)
        if not self.indexed:
            seed_vectors(vectors)
        with blaming(retriever_part(parts.retriever), theirs="retriever" in parts.custom):
            if not self.indexed:
                parts.retriever.index(self.documents)
                self.indexed = True
            got = parts.retriever.retrieve(dict(queries), k)
        return got, reranking_failure(parts.retriever)

    async def generate(
        self,
        shared: list[Any],
        cases: Sequence[TestCase],
        rankings: Mapping[str, Ranking],
        k: int,
        existing: Mapping[Any, Answer],
    ) -> tuple[list[Answer], list[Any]]:
        """The answers of ``cases`` at ``k`` (``generate_answers``) and their ledger entries."""
        from ragjudge.generate import generate_answers

        parts = await self._ready(shared)
        assert parts.generator is not None
        got = await generate_answers(
            cases,
            rankings,
            self.docs,
            [k],
            parts.generator,
            concurrency=self.concurrency,
            existing=existing,
        )
        return got, self._drain()

    async def judge(
        self, shared: list[Any], name: str, items: Sequence[JudgeInput]
    ) -> tuple[list[JudgeResult], list[Any]]:
        """Judge ``name``'s result for each item (in order) and the ledger entries."""
        from ragjudge.judges.runner import judge_one, prepared_slices

        judge = (await self._ready(shared)).judges[name]
        sem = asyncio.Semaphore(self.concurrency)

        async def one(item: JudgeInput) -> JudgeResult:
            async with sem:
                return await judge_one(judge, item)

        results: list[JudgeResult] = []
        for part in prepared_slices([judge], items):
            results += await asyncio.gather(*(one(items[i]) for i in part))
        return results, self._drain()
