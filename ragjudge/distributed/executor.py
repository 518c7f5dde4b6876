"""``RayExecutor``: a sweep's plan carried out on Ray workers (``ragjudge.protocols.Executor``).

The driver (this process) plans, dispatches batches and writes the run store, exactly as the
in-process executor does; only the work moves:

- retrieval: the corpus of every dense stage is encoded by Ray encoder actors into the
  content-hash vector cache (``encode``), then the queries are ranked in batches on the
  workers (each indexes the corpus once, reading the driver's vectors);
- generation: each slice of answers at one k in batches of cases;
- judging: the planned calls of each judge in batches of items.

A batch returns rows; the driver stores a batch's rows in one transaction, by their keys, and
charges the budget with their usage. A worker killed mid-batch is restarted by Ray and the
batch is run again: nothing was stored for it, so nothing is duplicated, and the LLM calls it
had already made come from the driver's cache (``cluster.CacheActor``). A driver killed with
``kill -9`` resumes from the store like any run. The budget is checked before each batch is
sent (the items in flight reserved), so a run stops cleanly between batches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from ragjudge.distributed.cluster import WorkerPool, batches_of, connect
from ragjudge.distributed.jobs import encode_stages, rank_on_ray
from ragjudge.distributed.workers import sweep_parts
from ragjudge.errors import ConfigError
from ragjudge.generate import AnswerKey
from ragjudge.protocols import Judge
from ragjudge.schema import Answer, JudgeResult, Ranking, TestCase
from ragjudge.store.base import StoredJudgeResult
from ragjudge.sweep.config import SweepConfig
from ragjudge.sweep.execute import InProcessExecutor
from ragjudge.sweep.plan import JudgeTask


class RayExecutor(InProcessExecutor):
    """Runs the sweep's stages on ``config.executor.num_workers`` Ray workers, each building
    its parts from ``recipe``; stores under ``run_id`` from this process."""

    @classmethod
    def build(cls, *args: Any, recipe: SweepConfig | None, **kwargs: Any) -> RayExecutor:
        """``InProcessExecutor.build``'s arguments; the parts must come from a config
        (``recipe``): every worker builds its own from it."""
        if recipe is None:
            raise ConfigError(
                "executor.kind: ray: every Ray worker builds the retriever, generator and "
                "judges from the config, so they cannot be passed as objects; name them in the "
                "config (a part of your own as module:object) or use the in-process executor"
            )
        return cls(*args, recipe=recipe, **kwargs)

    @classmethod
    def prepare(cls, config: SweepConfig) -> None:
        """Join the cluster (``cluster.connect``) before the run is stored: an address that
        fails leaves no empty run behind."""
        connect(config.executor.address, config.executor.num_workers)

    def __init__(self, *args: Any, recipe: SweepConfig, **kwargs: Any) -> None:
        """``InProcessExecutor``'s arguments, and the config the workers build from."""
        super().__init__(*args, **kwargs)
        ex = self.config.executor
        connect(ex.address, ex.num_workers)
        self.workers = ex.num_workers
        self.recipe = recipe
        self._pool: WorkerPool | None = None

    @property
    def pool(self) -> WorkerPool:
        """The workers, started on first use (after corpus encoding, which needs the CPUs)."""
        if self._pool is None:
            self._pool = WorkerPool(
                partial(sweep_parts, self.recipe),
                self.workers,
                uses_llm=self.comp.llm is not None,
                concurrency=self.config.concurrency,
                documents=self.testset.documents,
            )
        return self._pool

    def close(self) -> None:
        """End the workers."""
        if self._pool is not None:
            self._pool.close()

    async def _record(self, entries: Sequence[Any]) -> None:
        """Record the workers' ledger entries in the run's ledger, and wait until its sinks
        have stored them."""
        if self.comp.llm is not None:
            for entry in entries:
                self.comp.llm.ledger.record(entry)
            await self.comp.llm.ledger.settle()

    def _rank(self, queries: Mapping[str, str], k: int) -> tuple[dict[str, Ranking], str | None]:
        """Encode the corpus of each dense stage on Ray encoder actors, then rank ``queries`` in
        batches on the workers."""
        docs = self.testset.documents
        vectors = encode_stages(self.comp.retriever, docs, self.workers, self.progress)
        return rank_on_ray(self.pool, vectors, queries, k)

    async def _answer(
        self,
        cases: Sequence[TestCase],
        rankings: Mapping[str, Ranking],
        k: int,
        existing: Mapping[AnswerKey, Answer],
    ) -> list[Answer]:
        """The answers of ``cases`` at ``k``, in batches of cases on the workers (in order)."""
        batches = batches_of(cases, self.workers)
        args = []
        for batch in batches:
            ids = {c.id for c in batch}
            mine = {key: a for key, a in existing.items() if key[0] in ids}
            args.append((batch, {i: rankings[i] for i in ids if i in rankings}, k, mine))
        out: list[list[Answer]] = [[] for _ in batches]
        for i, (answers, entries) in self.pool.run("generate", args):
            await self._record(entries)
            out[i] = answers
        return [a for part in out for a in part]

    def _prepare(self, judge: Judge, tasks: Sequence[JudgeTask]) -> asyncio.Future[None] | None:
        """Nothing: the workers prepare what they judge."""
        return None

    async def _run(
        self,
        judge: Judge,
        tasks: Sequence[JudgeTask],
        rows: Callable[[JudgeTask, JudgeResult], list[StoredJudgeResult]],
        *,
        first_prepared: bool = False,
    ) -> None:
        """Judge the tasks in batches on the workers, storing each batch's rows as it returns;
        with an LLM, a batch is sent only if its items that may spend fit the budget beside
        the batches in flight.
        (The workers prepare what they judge: ``first_prepared`` is not this driver's.)"""
        from ragjudge.judges.runner import may_spend

        batches = batches_of(tasks, self.workers)
        in_flight: dict[int, int] = {}
        # items of each batch that may spend (a cascade's kept items do not: runner.may_spend)
        paying = [
            sum([await may_spend(judge, t.item) for t in batch]) if self.comp.llm else 0
            for batch in batches
        ]

        def admit(i: int) -> None:
            if paying[i]:
                self.budget.check_batch(sum(in_flight.values()) + paying[i])
            in_flight[i] = paying[i]

        args = [(judge.name, [t.item for t in batch]) for batch in batches]
        with self._bar(judge.name, len(tasks)) as advance:
            for i, (results, entries) in self.pool.run("judge", args, admit):
                del in_flight[i]
                await self._record(entries)
                pairs = zip(batches[i], results, strict=True)
                self.store.put_judge_results(self.run_id, [r for t, x in pairs for r in rows(t, x)])
                self.budget.spent_on(res.usage for res in results)
                for _ in results:
                    advance()
