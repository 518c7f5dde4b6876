"""The in-process executor (``ragjudge.protocols.Executor``): carries out a sweep's plan in this
process (asyncio, ``concurrency`` judge calls at a time) and writes through the run store.

Each stage writes as soon as a result exists: the rankings and retrieval metrics once, the
answers after each slice of generation, the judge results (with their prefix derivations and
copies, ``ragjudge.sweep.plan``) through ``ResultWriter``, in a worker thread: a result that
used an LLM is written before its task ends, with the rows waiting then; free results (the
offline judges) are written ``FREE_ROWS`` at a time and at the end of each slice, so a free
judgement does not cost a transaction. A run killed at any point therefore resumes without
duplicate rows and without paying again (at most the free results still waiting are judged
again).

Budget: before an LLM-backed call starts, ``Budget.admit`` checks that the calls and cost
already spent in this run (its stored ledger) plus a reservation for the calls in flight stay
within the limits; otherwise no new call starts, the calls in flight finish, and
``BudgetExhausted`` ends the stage.

``build_executor`` returns it, or the Ray executor, as the config's ``executor`` says; the Ray
executor reuses this one's stages and replaces only where work runs (``_rank``, ``_answer``,
``_run``).
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from ragjudge.errors import RagjudgeError, UserCodeError, in_user_code, raised_at
from ragjudge.llm.settings import error_text
from ragjudge.protocols import BatchedJudge, Judge
from ragjudge.schema import (
    Answer,
    JudgeInput,
    JudgeResult,
    Ranking,
    TestCase,
    TestSet,
    TokenUsage,
)
from ragjudge.store.base import RetrievalMetric, RunStore, StoredJudgeResult
from ragjudge.sweep.budget import Budget, BudgetExhausted
from ragjudge.sweep.commit import Committer
from ragjudge.sweep.components import Components
from ragjudge.sweep.config import RETRIEVAL_METRIC_NAMES, SweepConfig
from ragjudge.sweep.executors import executor_class
from ragjudge.sweep.plan import AnswerPlan, JudgePlan, JudgeTask, prefix_rows
from ragjudge.sweep.stages import StageFailedError, generation_failure, reranking_failure

if TYPE_CHECKING:
    from ragjudge.generate import AnswerKey

Progress = Callable[[str], None]
RowsOf = Callable[[JudgeTask, JudgeResult], list[StoredJudgeResult]]
"""The stored rows of a task's result (a prefix judge's rows at every k, or a task's copies)."""


class _Step(NamedTuple):
    """One judge's tasks in ``InProcessExecutor.judge``: where they are judged (the progress
    line), the timings' phase, and the rows a result becomes."""

    judge: Judge
    tasks: Sequence[JudgeTask]
    where: str
    phase: str
    rows: RowsOf


FREE_ROWS = 128
"""Free judge rows (results that used no LLM) written in one transaction."""


def retriever_part(retriever: object) -> str:
    """``retriever NAME`` (its ``name``, else its class): how an error blames it."""
    return f"retriever {getattr(retriever, 'name', None) or type(retriever).__qualname__}"


def user_code_error(part: str, exc: BaseException, *, theirs: bool = False) -> UserCodeError | None:
    """``UserCodeError("PART raised Type: message (at file:line in function)")`` (one line,
    ``ragjudge.errors.raised_at``) when ``exc`` passed through the user's code
    (``ragjudge.errors.in_user_code``) or ``theirs`` (the part is one the user supplied, e.g. a
    LangChain retriever, whose library raised); None for ragjudge's own errors
    (``RagjudgeError``: e.g. a ``DataError`` about what the part returned) and for an exception
    of a built-in part that never passed through the user's code (a bug of ragjudge or a
    library, reported as such)."""
    if isinstance(exc, RagjudgeError) or not (theirs or in_user_code(exc)):
        return None
    return UserCodeError(f"{part} raised {' '.join(error_text(exc).split())} (at {raised_at(exc)})")


@contextmanager
def blaming(part: str, *, theirs: bool = False) -> Iterator[None]:
    """Run the block; an exception that ``user_code_error(part, exc, theirs=theirs)`` blames on
    the user's code leaves it as that ``UserCodeError``, caused by the exception; any other
    exception leaves it unchanged."""
    try:
        yield
    except Exception as exc:
        err = user_code_error(part, exc, theirs=theirs)
        if err is None:
            raise
        raise err from exc


class ResultWriter:
    """Judge rows on their way to the run store, committed in a worker thread (``Committer``):
    ``await add(rows, result)`` returns once everything waiting is written when ``result``
    used an LLM (its usage is not empty: paid work is never left unwritten) or when
    ``FREE_ROWS`` rows wait; ``await flush()`` writes what waits (the executor calls it at the
    end of each slice and when a stage stops). Results returning while a write runs share the
    next one."""

    def __init__(self, store: RunStore, run_id: str) -> None:
        self._rows: Committer[StoredJudgeResult] = Committer(
            partial(store.put_judge_results, run_id)
        )

    @property
    def waiting(self) -> list[StoredJudgeResult]:
        """The rows not yet handed to a write."""
        return self._rows.waiting

    async def add(self, rows: Sequence[StoredJudgeResult], result: JudgeResult) -> None:
        self._rows.add(rows)
        if result.usage != TokenUsage() or len(self._rows.waiting) >= FREE_ROWS:
            await self._rows.settle()

    async def flush(self) -> None:
        await self._rows.settle()


@runtime_checkable
class Executor(Protocol):
    """Carries out a sweep run's plan; each method stores what it computes before returning
    (or, on a budget stop, raising ``BudgetExhausted``), so a killed run resumes from the store.
    """

    timings: dict[str, float]
    budget: Budget
    """The run's budget: checked before LLM work starts, charged as results return."""

    def retrieve(self) -> dict[str, Ranking]:
        """Every case's ranking at k_max (stored)."""
        ...

    def score_retrieval(self, rankings: Mapping[str, Ranking]) -> None:
        """Store the retrieval metrics of the labelled cases at every k."""
        ...

    async def generate(
        self, plan: AnswerPlan, rankings: Mapping[str, Ranking]
    ) -> dict[tuple[str, int], Answer]:
        """Generate ``plan.missing`` (stored); return every usable answer by (case, k)."""
        ...

    async def judge(self, plan: JudgePlan) -> None:
        """Store ``plan.known`` and the rows of every planned call."""
        ...

    def close(self) -> None:
        """Release what the executor holds (workers, connections); called once, at the end."""
        ...


class InProcessExecutor:
    """Runs the retriever, generator and judges of ``comp`` here, storing under ``run_id``."""

    @classmethod
    def build(
        cls,
        config: SweepConfig,
        testset: TestSet,
        store: RunStore,
        run_id: str,
        comp: Components,
        progress: Progress,
        show_bar: bool = False,
        *,
        recipe: SweepConfig | None,
    ) -> InProcessExecutor:
        """The executor of ``build_executor``'s arguments (``recipe`` is not needed here)."""
        return cls(config, testset, store, run_id, comp, progress, show_bar)

    def __init__(
        self,
        config: SweepConfig,
        testset: TestSet,
        store: RunStore,
        run_id: str,
        comp: Components,
        progress: Progress,
        show_bar: bool = False,
    ) -> None:
        self.config = config
        self.show_bar = show_bar
        self.testset = testset
        self.store = store
        self.run_id = run_id
        self.comp = comp
        self.progress = progress
        self.cases = testset.cases
        self.case_by_id = {c.id: c for c in self.cases}
        self.docs = testset.doc_index()
        self.budget = Budget(config.budget, store, run_id)
        self.sem = asyncio.Semaphore(config.concurrency)
        self.timings: dict[str, float] = defaultdict(float)
        """Wall seconds per phase: ``retrieval``, ``generate@k``, ``judge:prefix``, ``judge@k``."""
        self.generated = self.generated_ok = 0
        """Answers generated by this process, and how many of them without an error."""

    # ------------------------------------------------------------------ retrieval

    def retrieve(self) -> dict[str, Ranking]:
        """The top-k_max ranking of every case (indexing the corpus first), stored. A retriever
        whose code (the user's) raises is a ``UserCodeError`` naming it and where it raised
        (``blaming``)."""
        k_max = self.config.k_max
        self.progress(f"retrieving top {k_max} for {len(self.cases)} queries")
        t0 = time.perf_counter()
        theirs = "retriever" in self.comp.custom
        with blaming(retriever_part(self.comp.retriever), theirs=theirs):
            got, failure = self._rank({c.id: c.question for c in self.cases}, k_max)
        rankings = {
            c.id: got.get(c.id, Ranking(query_id=c.id, docs=[])).top(k_max) for c in self.cases
        }
        if failure is not None:  # not stored: a resumed run re-ranks
            raise StageFailedError(failure)
        self.store.put_rankings(self.run_id, rankings.values())
        top = max((len(r.docs) for r in rankings.values()), default=0)
        if top < k_max:
            short = [k for k in self.config.ks if k > top]
            self.progress(
                f"warning: the retriever returned at most {top} documents per query, fewer "
                f"than k = {k_max}: k = {', '.join(map(str, short))} repeat "
                f"k = {top} and are reported as not retrieved (raise the retriever's own k)"
            )
        self.timings["retrieval"] += time.perf_counter() - t0
        return rankings

    def _rank(self, queries: Mapping[str, str], k: int) -> tuple[dict[str, Ranking], str | None]:
        """Index the corpus and rank ``queries`` at ``k``; also the message of a reranking
        stage whose every call failed (``stages.reranking_failure``), else None."""
        self.comp.retriever.index(self.testset.documents)
        got = self.comp.retriever.retrieve(queries, k)
        return got, reranking_failure(self.comp.retriever)

    def score_retrieval(self, rankings: Mapping[str, Ranking]) -> None:
        """Store the retrieval metrics of every case with relevance labels at every k."""
        from ragjudge.metrics import evaluate_rankings

        qrels = {c.id: dict(c.relevant) for c in self.cases if c.relevant}
        if not qrels:
            return
        judged = {q: rankings[q] for q in qrels if q in rankings}
        report = evaluate_rankings(qrels, judged, ks=self.config.ks)
        rows = []
        for case_id, values in report.per_query.items():
            for key, value in values.items():
                name, _, k = key.partition("@")
                if name in RETRIEVAL_METRIC_NAMES and k.isdigit() and int(k) in self.config.ks:
                    rows.append(RetrievalMetric(case_id, int(k), name, float(value)))
        self.store.put_retrieval_metrics(self.run_id, rows)

    # ------------------------------------------------------------------ generation

    async def generate(
        self, plan: AnswerPlan, rankings: Mapping[str, Ranking]
    ) -> dict[tuple[str, int], Answer]:
        """Generate the planned answers k by k (a context list seen at a smaller k is answered
        once, stored without usage); return every usable answer by (case, k)."""
        from ragjudge.generate import answer_key

        have = dict(plan.have)
        # a generator whose client is None (the extractive one) spends nothing, whatever the
        # judges do; one without a ``client`` attribute may
        paid = self.comp.llm is not None and getattr(self.comp.generator, "client", 1) is not None
        for k, case_ids in plan.missing.items():
            missing = [self.case_by_id[c] for c in case_ids]
            self.progress(f"generating answers at k={k} ({len(missing)} cases)")
            t0 = time.perf_counter()
            existing = {answer_key(a): a for a in have.values()}
            # In slices, so that a budget stop happens between LLM calls, not after all of them.
            step = self.config.concurrency * 4 if paid else len(missing)
            for start in range(0, len(missing), step):
                chunk = missing[start : start + step]
                if paid:
                    self.budget.check_batch(len(chunk))
                got = await self._answer(chunk, rankings, k, existing)
                # An answer reused from a smaller k is stored without usage (paid once).
                got = [
                    a.model_copy(update={"usage": TokenUsage()}) if answer_key(a) in existing else a
                    for a in got
                ]
                self.store.put_answers(self.run_id, got)
                self.budget.spent_on(a.usage for a in got)
                self._check_generation([a for a in got if answer_key(a) not in existing])
                for a in got:
                    have[(a.case_id, a.k)] = a
                    existing[answer_key(a)] = a
            self.timings[f"generate@{k}"] += time.perf_counter() - t0
        return have

    async def _answer(
        self,
        cases: Sequence[TestCase],
        rankings: Mapping[str, Ranking],
        k: int,
        existing: Mapping[AnswerKey, Answer],
    ) -> list[Answer]:
        """The answers of ``cases`` at ``k`` (one reused from ``existing`` when its context
        list was answered before), as ``generate_answers`` gives them."""
        from ragjudge.generate import generate_answers

        return await generate_answers(
            cases,
            rankings,
            self.docs,
            [k],
            self.comp.generator,
            concurrency=self.config.concurrency,
            existing=existing,
        )

    def _check_generation(self, fresh: Sequence[Answer]) -> None:
        """Stop before paying for more failing calls when no answer so far succeeded."""
        self.generated_ok += sum(a.error is None for a in fresh)
        self.generated += len(fresh)
        if self.generated_ok == 0:
            failure = generation_failure(fresh)
            if failure is not None:
                raise StageFailedError(failure)

    # ------------------------------------------------------------------ judging

    async def judge(self, plan: JudgePlan) -> None:
        """Carry out ``plan``: store its known rows, then judge it step by step (a judge's
        prefix tasks, then each k's tasks of each judge), each step's items prepared before
        it is judged (the next step's meanwhile, ``_prepare``) and its rows stored as they
        return (``_run``)."""
        if plan.known:
            self.store.put_judge_results(self.run_id, plan.known)
        from ragjudge.judges.runner import PREPARE_SLICE

        ks = self.config.ks
        await self._preflight([*plan.prefix, *((j, t) for _, j, t in plan.per_k)])

        def prefix(task: JudgeTask, result: JudgeResult) -> list[StoredJudgeResult]:
            return prefix_rows(task.judge, task.case_id, result, ks)

        steps = [
            _Step(judge, tasks, f"once at k={ks[-1]} ({len(tasks)} cases)", "judge:prefix", prefix)
            for judge, tasks in plan.prefix
        ]
        steps += [
            _Step(judge, tasks, f"at k={k} ({len(tasks)} items)", f"judge@{k}", JudgeTask.rows)
            for k, judge, tasks in plan.per_k
        ]
        ahead: asyncio.Future[None] | None = None
        started_ahead = False  # this step's preparation began during the last one
        for i, (judge, tasks, where, phase, rows) in enumerate(steps):
            self.progress(f"judging {judge.name} {where}")
            t0 = time.perf_counter()
            ready = ahead if started_ahead else self._prepare(judge, tasks)
            if ready is not None:
                await ready
            started_ahead = i + 1 < len(steps) and len(tasks) <= PREPARE_SLICE
            ahead = self._prepare(*steps[i + 1][:2]) if started_ahead else None
            await self._run(judge, tasks, rows, first_prepared=True)
            self.timings[phase] += time.perf_counter() - t0

    def _prepare(self, judge: Judge, tasks: Sequence[JudgeTask]) -> asyncio.Future[None] | None:
        """Prepare the first slice of ``tasks`` (``runner.prepared_slices``) in a worker
        thread; None when ``judge`` prepares nothing (not a ``BatchedJudge``). ``judge`` starts
        this for the next step while it judges the current one (whose texts are all encoded by
        then), so the next step's texts are encoded on the encoder's threads while the current
        step's judges run their Python (offline judges: the cores are otherwise half idle);
        ``_run`` then finds that slice prepared. Only after a one-slice step: a longer step
        prepares its later slices while it is judged, and the next step's preparation would
        take the encoder's threads from them (a text wanted by both is encoded once either
        way, ``EmbeddingCache.vectors``)."""
        from ragjudge.judges.runner import prepared_slices

        if not isinstance(judge, BatchedJudge):
            return None
        items = [t.item for t in tasks]

        def first_slice() -> None:
            next(prepared_slices([judge], items), None)

        return asyncio.get_running_loop().run_in_executor(None, first_slice)

    async def _preflight(self, work: Sequence[tuple[Judge, Sequence[JudgeTask]]]) -> None:
        """Before any call: each ``SpendingJudge`` says what its tasks will cost (the
        cascade: how many items escalate to the LLM); the total must fit the budget, else
        ``BudgetExhausted`` before anything is spent."""
        from ragjudge.judges.runner import estimate_spend

        calls, cost = 0, 0.0
        for judge, tasks in work:
            for est in await estimate_spend([judge], [t.item for t in tasks]):
                self.progress(f"pre-flight: {est.describe()}")
                calls, cost = calls + est.calls, cost + est.cost_usd
        if calls:
            self.budget.check_estimate(calls, cost)

    async def _judge_one(self, judge: Judge, item: JudgeInput) -> JudgeResult:
        """``judge_one`` in a slot of the run's concurrency; with an LLM in the run, an item
        that may spend (``runner.may_spend``) is admitted against the budget first."""
        from ragjudge.judges.runner import judge_one, may_spend

        async with self.sem:
            if self.comp.llm is None or not await may_spend(judge, item):
                return await judge_one(judge, item)
            await self.budget.admit()
            res: JudgeResult | None = None
            try:
                res = await judge_one(judge, item)
                return res
            finally:
                self.budget.done(res.usage if res is not None else None)

    async def _run(
        self,
        judge: Judge,
        tasks: Sequence[JudgeTask],
        rows: RowsOf,
        *,
        first_prepared: bool = False,
    ) -> None:
        """Judge every task concurrently (slice by slice, ``prepared_slices``; the first one
        already prepared when ``first_prepared``, ``_prepare``), storing
        ``rows(task, result)`` through a ``ResultWriter`` as each returns (all of them by the
        end of each slice); on a budget stop, let the calls already sent finish and store them
        (they are paid: cancelling one threw its reply away, and a resumed run paid for it
        again), while every task not yet admitted stops at the budget, then re-raise."""
        writer = ResultWriter(self.store, self.run_id)
        with self._bar(judge.name, len(tasks)) as advance:

            async def one(task: JudgeTask) -> None:
                res = await self._judge_one(judge, task.item)
                await writer.add(rows(task, res), res)
                advance()

            from ragjudge.judges.runner import prepared_slices

            running: list[asyncio.Task[None]] = []
            try:
                items = [t.item for t in tasks]
                for part in prepared_slices([judge], items, first_prepared=first_prepared):
                    running = [asyncio.create_task(one(tasks[i])) for i in part]
                    await asyncio.gather(*running)
                    await writer.flush()
            except BudgetExhausted:
                await asyncio.gather(*running, return_exceptions=True)
                raise
            finally:
                await writer.flush()

    def close(self) -> None:
        """Nothing to release: everything ran in this process."""

    @contextmanager
    def _bar(self, label: str, total: int) -> Iterator[Callable[[], None]]:
        """A transient rich progress bar on stderr (when enabled), yielding ``advance()``."""
        if not self.show_bar or total < 2:
            yield lambda: None
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        cols = ("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn())
        bar = Progress(*cols, TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        with bar:
            task = bar.add_task(label, total=total)
            yield lambda: bar.advance(task)


def prepare_executor(config: SweepConfig) -> None:
    """Call the ``prepare(config)`` classmethod of the executor ``config.executor.kind`` names,
    when it has one, before the run is stored: what can fail before any work (the Ray one
    joins its cluster) fails with no run left behind."""
    prepare = getattr(executor_class(config.executor.kind), "prepare", None)
    if prepare is not None:
        prepare(config)


def build_executor(
    config: SweepConfig,
    testset: TestSet,
    store: RunStore,
    run_id: str,
    comp: Components,
    progress: Progress,
    show_bar: bool = False,
    *,
    recipe: SweepConfig | None,
) -> Executor:
    """The executor ``config.executor.kind`` names in the registry
    (``ragjudge.sweep.executors``; the Ray one is imported only then), built by its ``build``.
    ``recipe`` is the config the parts were built from (None when they were passed as
    objects), for executors whose workers build their own parts from it."""
    cls = executor_class(config.executor.kind)
    built: Executor = cls.build(
        config, testset, store, run_id, comp, progress, show_bar, recipe=recipe
    )
    return built
