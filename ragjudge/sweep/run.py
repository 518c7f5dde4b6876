"""k-sweep orchestration: retrieve once, generate per k from the prefix, judge per k, store all.

The work of one run, in order (every step skips what the store already holds, so a resumed run
continues where it stopped and never writes a row twice):

1. Retrieve once at k_max; store the rankings and the retrieval metrics at every k.
2. Generate, per k, the answer from the top-k prefix (``generate_answers``: a context list seen
   at a smaller k is answered once). Answers are stored after each k.
3. Prefix judges (context recall and precision) judge each case once, on the k_max contexts;
   their result at every smaller k is ``judge.at_k(result, k)``, at no further cost.
4. The other judges run per k. Identical judge inputs are judged once: the key is what the judge
   reads (``needs_answer`` / ``needs_contexts`` where a judge declares them, else everything),
   so, e.g., answer relevancy of the same answer at two k costs one judgement. Identical LLM
   prompts that still reach the client hit its cache.

Each judge result is written in its own transaction as soon as it exists; the LLM cache holds
every call that completed. A run killed at any point therefore resumes without duplicate rows
and without paying again for a call already made. A row copied from another (a prefix-derived
or de-duplicated result) carries zero usage, so that the stored usage sums to what was spent.

Budget: before an LLM-backed step starts, ``Budget.admit`` checks that the calls and cost
already spent in this run (its stored ledger) plus a reservation for the steps in flight stay
within the limits; otherwise no new step starts, the steps in flight finish, and the run ends as
``stopped_budget`` (resumable, e.g. with a larger budget).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ragjudge import __version__
from ragjudge.adapters import with_retrieved
from ragjudge.errors import ConfigError
from ragjudge.judges.base import conform, is_prefix
from ragjudge.protocols import Generator, Judge
from ragjudge.schema import (
    Answer,
    JudgeInput,
    JudgeResult,
    JudgeStatus,
    Ranking,
    RunManifest,
    RunModels,
    TestCase,
    TestSet,
    TokenUsage,
)
from ragjudge.store.lock import RunLock
from ragjudge.store.sqlite import RetrievalMetric, RunStore, StoredJudgeResult, item_id, now
from ragjudge.sweep.analysis import SweepData, SweepSummary, analyse
from ragjudge.sweep.budget import Budget, BudgetExhausted
from ragjudge.sweep.config import SweepConfig, diff_definitions, hash_json
from ragjudge.sweep.stages import (
    StageFailedError,
    generation_failure,
    judging_failure,
    reranking_failure,
)

RETRYABLE = frozenset(
    {
        JudgeStatus.timeout,
        JudgeStatus.rate_limited,
        JudgeStatus.provider_error,
        JudgeStatus.skipped_budget,
    }
)
"""Statuses of a transient failure: a resumed run judges such an item again."""

RETRIEVAL_METRICS = ("precision", "recall", "ndcg", "hit_rate", "mrr")
"""Retrieval metrics stored at every k (keys of ``evaluate_rankings`` as ``name@k``)."""

Progress = Callable[[str], None]


@dataclass
class Components:
    """The parts a sweep runs. ``build_components`` makes them from a config; tests and
    notebooks may pass their own (any object meeting the protocols)."""

    retriever: Any
    """Has ``index(documents)`` and ``retrieve(queries, k) -> dict[str, Ranking]``."""
    generator: Generator
    judges: list[Judge]
    llm: Any | None = None
    """The ``LLMClient`` the LLM-backed parts share (its ledger feeds the run's ledger)."""
    models: dict[str, str] = field(default_factory=dict)
    """``RunModels.as_dict()``: the models the run used."""
    prompts: dict[str, str] = field(default_factory=dict)
    custom: dict[str, str] = field(default_factory=dict)
    """Parts the config does not name as built-ins: role (``retriever``, ``generator``,
    ``judge:<name>``) -> ``name@version`` (``ragjudge.adapters.identity``); they enter the
    run's definition, so a changed part never resumes another part's run."""


@dataclass
class SweepOutcome:
    run_id: str
    status: str
    resumed: bool
    summary: SweepSummary
    counts: dict[str, int]
    llm_calls: int = 0
    """LLM calls this process sent (cache hits excluded)."""
    llm_answered: int = 0
    """Of those, the calls the endpoint answered (a reply arrived; from the ledger)."""
    cached_calls: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    """Wall seconds of this process per phase: ``retrieval``, ``generate@k``,
    ``judge:prefix`` (prefix judges at k_max), ``judge@k``."""


def _uses_llm(config: SweepConfig) -> bool:
    return (
        config.judges.backend in ("llm", "ragas")
        or bool(config.judges.criteria)
        or config.generator.kind == "chat"
        or any(r.spec.startswith("llm") for r in config.rerankers)
    )


def build_components(config: SweepConfig) -> Components:
    """The retriever pipeline, generator and judges a config names (heavy imports here); a
    ``module:object`` name is imported (``ragjudge.adapters``)."""
    from ragjudge.adapters import as_generator, as_retriever, identity, is_import_path, load_object
    from ragjudge.generate import build_generator
    from ragjudge.judges.llm.criteria import CriteriaJudge
    from ragjudge.judges.registry import create_judge
    from ragjudge.retrieval import Pipeline, build_reranker, build_retriever
    from ragjudge.retrieval.pipeline import Stage

    llm = None
    judge_llms: list[Any] = []
    names, criteria = config.judges.names, config.judges.criteria
    if _uses_llm(config):
        from ragjudge.llm import judge_clients

        # One client per judge (own connection pool), all sharing one ledger and one cache.
        llm, *judge_llms = judge_clients(1 + len(names) + len(criteria))
    custom: dict[str, str] = {}
    if is_import_path(config.retriever.kind):
        first = as_retriever(load_object(config.retriever.kind))
        custom["retriever"] = identity(first)
    else:
        first = build_retriever(config.retriever.kind, **config.retriever.options)
    stages: list[Stage] = []
    for r in config.rerankers:
        if r.spec == "prune":
            stages.append((None, r.depth))
        elif r.spec.startswith("llm"):
            stages.append((build_reranker(r.spec, client=llm), r.depth, r.keep))
        else:
            stages.append((build_reranker(r.spec), r.depth, r.keep))
    retriever = Pipeline(first, stages=stages) if stages else first
    gen_options = dict(config.generator.options)
    if is_import_path(config.generator.kind):
        generator = as_generator(load_object(config.generator.kind))
        custom["generator"] = identity(generator)
    else:
        if config.generator.kind == "chat":
            gen_options.setdefault("client", llm)
        generator = build_generator(config.generator.kind, **gen_options)
    backend = config.judges.backend
    clients = iter(judge_llms or [None] * (len(names) + len(criteria)))
    judges: list[Judge] = []
    for n in names:
        client = next(clients)
        if is_import_path(n):
            obj = load_object(n)
            judge = conform(obj() if isinstance(obj, type) else obj)
            custom[f"judge:{judge.name}"] = identity(judge)
        else:
            judge = create_judge(n, backend, **({"client": client} if backend != "offline" else {}))
        judges.append(judge)
    judges += [CriteriaJudge(n, c, client=next(clients)) for n, c in criteria.items()]
    models = RunModels(
        retriever=str(getattr(retriever, "name", config.retriever.kind)),
        generator=llm.model
        if llm is not None and config.generator.kind == "chat"
        else f"{generator.name}@{generator.version}",
        judge=llm.model if llm is not None and (backend != "offline" or criteria) else None,
    )
    prompts = {f"judge:{j.name}": str(j.version) for j in judges}
    prompts["generator"] = str(generator.version)
    return Components(
        retriever,
        generator,
        judges,
        llm=llm,
        models=models.as_dict(),
        prompts=prompts,
        custom=custom,
    )


def llm_settings(comp: Components) -> dict[str, Any]:
    """The sampling settings of the run's LLM (``{"llm": {model, temperature, max_tokens,
    seed}}``, from RAGJUDGE_* variables), recorded in the manifest's definition: a resume under
    other settings is refused like any other definition change. Empty without an LLM."""
    settings = getattr(comp.llm, "settings", None)
    if settings is None:
        return {}
    keys = ("model", "temperature", "max_tokens", "seed")
    return {"llm": {k: getattr(settings, k, None) for k in keys}}


def load_dataset(config: SweepConfig) -> TestSet:
    """The configured test set, cut to ``limit`` / ``sample`` cases."""
    import random

    from ragjudge.io import load_testset
    from ragjudge.io.squad import load_squad

    ds = config.dataset
    ts = load_squad(ds.path) if ds.format == "squad" else load_testset(ds.path, split=ds.split)
    cases = ts.cases
    if ds.sample is not None and ds.sample < len(cases):
        keep = set(random.Random(config.seed).sample(range(len(cases)), ds.sample))
        cases = [c for i, c in enumerate(cases) if i in keep]
    if ds.limit is not None:
        cases = cases[: ds.limit]
    ts = ts.model_copy(update={"cases": cases})
    if not ts.cases:
        raise ConfigError(f"data set {config.dataset.path} has no test cases")
    return ts


def check_ks(config: SweepConfig, testset: TestSet) -> None:
    """k above the number of retrievable documents (or a reranker depth) is a config error."""
    n_docs = len(testset.documents)
    if n_docs == 0:
        ds = config.dataset
        where = ds.path if ds.format == "squad" else f"{ds.path}/corpus.jsonl"
        raise ConfigError(f"{where}: the corpus is empty: there is no document to retrieve")
    if config.k_max > n_docs:
        raise ConfigError(
            f"k = {config.k_max} is above the retrievable count: the corpus has {n_docs} "
            f"documents; use ks <= {n_docs}"
        )
    for r in config.rerankers:
        if r.spec == "prune" and r.depth < config.k_max:
            raise ConfigError(
                f"the prune stage keeps only depth = {r.depth} documents, fewer than the "
                f"largest k = {config.k_max}; raise its depth to at least {config.k_max}"
            )


def dataset_fingerprint(testset: TestSet) -> str:
    from ragjudge.io import dataset_hash

    return str(dataset_hash(testset))


def run_definition(config: SweepConfig, comp: Components) -> dict[str, Any]:
    """What identifies a run's computation: the config's definition; with custom parts, each
    one's ``name@version`` (``Components.custom``), replacing the config's entry for the
    retriever and generator roles. Without custom parts it is ``config.definition()``."""
    definition = config.definition()
    if comp.custom:
        for role in ("retriever", "generator"):
            if role in comp.custom:
                definition[role] = {"custom": comp.custom[role]}
        definition["components"] = dict(sorted(comp.custom.items()))
    return definition


def new_run_id(config_hash: str) -> str:
    stamp = now().replace("-", "").replace(":", "").split("+")[0]
    return f"{stamp}-{config_hash[:6]}-{secrets.token_hex(2)}"


# ---------------------------------------------------------------------------- run selection


def _identity(m: RunManifest) -> dict[str, Any]:
    return {
        "dataset_hash": m.dataset_hash,
        "definition": m.config.get("definition", {}),
        "models": m.models,
        "prompts": m.prompts,
    }


def check_resumable(old: RunManifest, new: RunManifest) -> None:
    """Refuse to resume ``old`` under a changed definition, naming each change."""
    changes = diff_definitions(_identity(old), _identity(new))
    if changes:
        raise ConfigError(
            f"refusing to resume run {old.run_id}: its configuration changed:\n  "
            + "\n  ".join(changes)
            + "\nrun without --resume to start a new run with the new configuration"
        )


def select_run(
    store: RunStore, fresh: RunManifest, *, resume: str | None, new: bool
) -> tuple[RunManifest, bool]:
    """The manifest to run under and whether it resumes an existing run.

    ``resume`` names a run explicitly; otherwise the newest unfinished run with the same
    identity is resumed (so running the same command again continues a crashed run), unless
    ``new`` is set.
    """
    if resume is not None:
        old = store.manifest(store.resolve(resume))
        check_resumable(old, fresh)
        return old, True
    if not new:
        for m in reversed(store.list_runs()):
            if m.status != "finished" and _identity(m) == _identity(fresh):
                return m, True
    store.create_run(fresh)
    return fresh, False


# ---------------------------------------------------------------------------- the sweep


def _judge_key(judge: Judge, item: JudgeInput) -> str:
    """What the judge reads from ``item`` (its declarations), hashed: identical keys get
    identical results."""
    parts: dict[str, Any] = {"judge": judge.name, "q": item.question, "ref": item.reference}
    if judge.needs_answer:
        parts["a"] = item.answer
    if judge.needs_contexts:
        parts["c"] = item.contexts
    return hash_json(parts)


def _copy(result: JudgeResult, case_id: str, k: int) -> JudgeResult:
    """A result reused for another item: its id, and no usage (the cost was paid once)."""
    return result.model_copy(update={"item_id": item_id(case_id, k), "usage": TokenUsage()})


class _Sweep:
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
        self.judges = [conform(j) for j in comp.judges]
        self.progress = progress
        self.cases = testset.cases
        self.case_by_id = {c.id: c for c in self.cases}
        self.docs = testset.doc_index()
        self.budget = Budget(config.budget, store, run_id)
        self.sem = asyncio.Semaphore(config.concurrency)
        self.timings: dict[str, float] = defaultdict(float)
        self.renewed: set[tuple[str, int]] = set()
        self.generated = self.generated_ok = 0
        """Answers generated by this process, and how many of them without an error."""

    # ------------------------------------------------------------------ retrieval

    def rankings(self) -> dict[str, Ranking]:
        stored = self.store.rankings(self.run_id)
        if all(c.id in stored for c in self.cases):
            return stored
        self.progress(f"retrieving top {self.config.k_max} for {len(self.cases)} queries")
        t0 = time.perf_counter()
        self.comp.retriever.index(self.testset.documents)
        got = self.comp.retriever.retrieve(
            {c.id: c.question for c in self.cases}, self.config.k_max
        )
        rankings = {
            c.id: got.get(c.id, Ranking(query_id=c.id, docs=[])).top(self.config.k_max)
            for c in self.cases
        }
        failure = reranking_failure(self.comp.retriever)
        if failure is not None:  # not stored: a resumed run re-ranks
            raise StageFailedError(failure)
        self.store.put_rankings(self.run_id, rankings.values())
        top = max((len(r.docs) for r in rankings.values()), default=0)
        if top < self.config.k_max:
            short = [k for k in self.config.ks if k > top]
            self.progress(
                f"warning: the retriever returned at most {top} documents per query, fewer "
                f"than k = {self.config.k_max}: k = {', '.join(map(str, short))} repeat "
                f"k = {top} and are reported as not retrieved (raise the retriever's own k)"
            )
        self.timings["retrieval"] += time.perf_counter() - t0
        return rankings

    def retrieval_metrics(self, rankings: Mapping[str, Ranking]) -> None:
        if self.store.retrieval_metrics(self.run_id):
            return
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
                if name in RETRIEVAL_METRICS and k.isdigit() and int(k) in self.config.ks:
                    rows.append(RetrievalMetric(case_id, int(k), name, float(value)))
        self.store.put_retrieval_metrics(self.run_id, rows)

    # ------------------------------------------------------------------ generation

    async def answers(self, rankings: Mapping[str, Ranking]) -> dict[tuple[str, int], Answer]:
        from ragjudge.generate import answer_key, generate_answers

        stored = self.store.answers(self.run_id)
        have = {(a.case_id, a.k): a for a in stored if a.error is None}
        # A failed generation is generated again; its old judgements are then stale.
        self.renewed = {(a.case_id, a.k) for a in stored if a.error is not None}
        for k in self.config.ks:
            missing = [c for c in self.cases if (c.id, k) not in have]
            if not missing:
                continue
            self.progress(f"generating answers at k={k} ({len(missing)} cases)")
            t0 = time.perf_counter()
            existing = {answer_key(a): a for a in have.values()}
            # In slices, so that a budget stop happens between LLM calls, not after all of them.
            step = self.config.concurrency * 4 if self.comp.llm is not None else len(missing)
            for start in range(0, len(missing), step):
                chunk = missing[start : start + step]
                if self.comp.llm is not None:
                    self.budget.check_batch(len(chunk))
                got = await generate_answers(
                    chunk,
                    rankings,
                    self.docs,
                    [k],
                    self.comp.generator,
                    concurrency=self.config.concurrency,
                    existing=existing,
                )
                # An answer reused from a smaller k is stored without usage (paid once).
                got = [
                    a.model_copy(update={"usage": TokenUsage()}) if answer_key(a) in existing else a
                    for a in got
                ]
                self.store.put_answers(self.run_id, got)
                self.budget.spent_on(a.usage for a in got)
                fresh = [a for a in got if answer_key(a) not in existing]
                self.generated_ok += sum(a.error is None for a in fresh)
                self.generated += len(fresh)
                if self.generated_ok == 0:  # stop before paying for more failing calls
                    failure = generation_failure(fresh)
                    if failure is not None:
                        raise StageFailedError(failure)
                for a in got:
                    have[(a.case_id, a.k)] = a
                    existing[answer_key(a)] = a
            self.timings[f"generate@{k}"] += time.perf_counter() - t0
        return have

    # ------------------------------------------------------------------ judging

    def _input(self, case: TestCase, answer: Answer, k: int) -> JudgeInput:
        return JudgeInput(
            id=item_id(case.id, k),
            question=case.question,
            answer=answer.text,
            contexts=list(answer.contexts),
            context_ids=list(answer.context_ids),
            reference=case.reference,
        )

    async def _judge(self, judge: Judge, item: JudgeInput) -> JudgeResult:
        from ragjudge.judges.runner import judge_one

        async with self.sem:
            if self.comp.llm is None:
                return await judge_one(judge, item)
            await self.budget.admit()
            res: JudgeResult | None = None
            try:
                res = await judge_one(judge, item)
                return res
            finally:
                self.budget.done(res.usage if res is not None else None)

    async def judge_all(self, answers: Mapping[tuple[str, int], Answer]) -> None:
        stored = {
            (r.case_id, r.k, r.judge): r.result
            for r in self.store.judge_results(self.run_id)
            if r.result.status not in RETRYABLE and (r.case_id, r.k) not in self.renewed
        }
        prefix = [j for j in self.judges if is_prefix(j)]
        others = [j for j in self.judges if j not in prefix]
        ks = self.config.ks

        # Known results by judge input, so that a resumed run reuses what it stored.
        seen: dict[str, JudgeResult] = {}
        for (case_id, k, name), res in stored.items():
            judge = next((j for j in others if j.name == name), None)
            ans = answers.get((case_id, k))
            if judge is not None and ans is not None:
                seen.setdefault(
                    _judge_key(judge, self._input(self.case_by_id[case_id], ans, k)), res
                )

        # Prefix judges: once at k_max, derived at every k.
        for judge in prefix:
            todo = []
            for case in self.cases:
                if all((case.id, k, judge.name) in stored for k in ks):
                    continue
                full = stored.get((case.id, ks[-1], judge.name))
                ans = answers.get((case.id, ks[-1]))
                if full is None and ans is not None:
                    todo.append((case, ans))
                elif full is not None:
                    self._store_prefix(judge, case.id, full)
            if todo:
                self.progress(f"judging {judge.name} once at k={ks[-1]} ({len(todo)} cases)")

            def on_prefix(case_id: str, _k: int, res: JudgeResult, judge: Judge = judge) -> None:
                self._store_prefix(judge, case_id, res)

            batch = [(c, ks[-1], self._input(c, a, ks[-1])) for c, a in todo]
            t0 = time.perf_counter()
            await self._run_batch(judge, batch, on_result=on_prefix)
            self.timings["judge:prefix"] += time.perf_counter() - t0

        # Other judges: per k, identical inputs once.
        for k in ks:
            for judge in others:
                batch = []
                copies: list[StoredJudgeResult] = []
                pending: dict[str, list[str]] = {}
                for case in self.cases:
                    ans = answers.get((case.id, k))
                    if ans is None or (case.id, k, judge.name) in stored:
                        continue
                    item = self._input(case, ans, k)
                    key = _judge_key(judge, item)
                    if key in seen:
                        copies.append(
                            StoredJudgeResult(case.id, k, judge.name, _copy(seen[key], case.id, k))
                        )
                    elif key in pending:
                        pending[key].append(case.id)
                    else:
                        pending[key] = []
                        batch.append((case, k, item))
                if copies:
                    self.store.put_judge_results(self.run_id, copies)
                if not batch:
                    continue
                self.progress(f"judging {judge.name} at k={k} ({len(batch)} items)")

                def on_result(
                    case_id: str,
                    k_: int,
                    res: JudgeResult,
                    judge: Judge = judge,
                    pending: dict[str, list[str]] = pending,
                ) -> None:
                    ans = answers[(case_id, k_)]
                    key = _judge_key(judge, self._input(self.case_by_id[case_id], ans, k_))
                    # Same input, same result: a transient failure too (judged again on resume).
                    rows = [StoredJudgeResult(case_id, k_, judge.name, res)]
                    rows += [
                        StoredJudgeResult(c, k_, judge.name, _copy(res, c, k_))
                        for c in pending.get(key, [])
                    ]
                    if res.status not in RETRYABLE:
                        seen[key] = res
                    self.store.put_judge_results(self.run_id, rows)

                t0 = time.perf_counter()
                await self._run_batch(judge, batch, on_result=on_result)
                self.timings[f"judge@{k}"] += time.perf_counter() - t0

    def _store_prefix(self, judge: Judge, case_id: str, full: JudgeResult) -> None:
        """The k_max result and its derivation at every smaller k. A failed judgement is
        stored at every k with its status (and, if transient, judged again on resume)."""
        ks = self.config.ks
        rows = [StoredJudgeResult(case_id, ks[-1], judge.name, full)]
        at_k = judge.at_k if full.status == JudgeStatus.ok else None  # type: ignore[attr-defined]
        rows += [
            StoredJudgeResult(
                case_id, k, judge.name, _copy(at_k(full, k) if at_k else full, case_id, k)
            )
            for k in ks[:-1]
        ]
        self.store.put_judge_results(self.run_id, rows)

    async def _run_batch(
        self,
        judge: Judge,
        batch: Sequence[tuple[TestCase, int, JudgeInput]],
        *,
        on_result: Callable[[str, int, JudgeResult], None],
    ) -> None:
        with self._bar(judge.name, len(batch)) as advance:

            async def one(case: TestCase, k: int, item: JudgeInput) -> None:
                res = await self._judge(judge, item)
                on_result(case.id, k, res)
                advance()

            tasks = [asyncio.create_task(one(c, k, it)) for c, k, it in batch]
            try:
                await asyncio.gather(*tasks)
            except BudgetExhausted:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

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


def group_results(
    rows: Sequence[StoredJudgeResult], names: Sequence[str]
) -> dict[str, list[JudgeResult]]:
    """Judge name -> its stored results (only the judges in ``names``)."""
    out: dict[str, list[JudgeResult]] = {n: [] for n in names}
    for row in rows:
        if row.judge in out:
            out[row.judge].append(row.result)
    return out


def _ledger_sink(store: RunStore, run_id: str) -> Callable[[Any], None]:
    """Persist each ledger entry (calls and HTTP attempts) of the run as it is recorded."""

    def sink(entry: Any) -> None:
        store.append_ledger(run_id, [entry.model_dump(mode="json")])

    return sink


def _answered_counter(count: list[int]) -> Callable[[Any], None]:
    """Count, in ``count[0]``, the call entries sent and answered (not cached, no error)."""

    def sink(entry: Any) -> None:
        if entry.kind == "call" and not entry.cached and entry.error_kind is None:
            count[0] += 1

    return sink


def run_sweep(
    config: SweepConfig,
    *,
    store: RunStore | None = None,
    resume: str | None = None,
    new: bool = False,
    components: Components | None = None,
    testset: TestSet | None = None,
    progress: Progress | None = None,
    tags: Mapping[str, str] | None = None,
    progress_bar: bool = False,
) -> SweepOutcome:
    """Run (or resume) a sweep to its end or to a budget stop; return its summary.

    ``progress`` receives one line per phase; ``progress_bar`` also shows rich bars."""
    return asyncio.run(
        arun_sweep(
            config,
            store=store,
            resume=resume,
            new=new,
            components=components,
            testset=testset,
            progress=progress,
            tags=tags,
            progress_bar=progress_bar,
        )
    )


async def arun_sweep(
    config: SweepConfig,
    *,
    store: RunStore | None = None,
    resume: str | None = None,
    new: bool = False,
    components: Components | None = None,
    testset: TestSet | None = None,
    progress: Progress | None = None,
    tags: Mapping[str, str] | None = None,
    progress_bar: bool = False,
) -> SweepOutcome:
    """``run_sweep`` inside a running event loop (notebooks)."""
    say: Progress = progress or (lambda _msg: None)
    store = store or RunStore()
    comp = components or build_components(config)
    testset = with_retrieved(testset or load_dataset(config), comp.retriever, config.k_max)
    check_ks(config, testset)
    definition = run_definition(config, comp)
    chash = hash_json(definition)
    # The judges summarised are the judges that run, whatever the config's names said.
    names = [j.name for j in comp.judges]
    try:
        config.check_weights(names)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    config = config.model_copy(update={"judges": config.judges.model_copy(update={"names": names})})
    fresh = RunManifest(
        run_id=new_run_id(chash),
        dataset_name=testset.name,
        dataset_hash=dataset_fingerprint(testset),
        config_hash=chash,
        config={
            "definition": definition | llm_settings(comp),
            "full": config.model_dump(mode="json"),
        },
        ragjudge_version=__version__,
        models=comp.models,
        prompts=comp.prompts,
        tags=dict(tags or {}),
        started_at=now(),
    )
    manifest, resumed = select_run(store, fresh, resume=resume, new=new)
    run_id = manifest.run_id
    with RunLock(store.path, run_id):
        if resumed:
            say(f"resuming run {run_id} (status {manifest.status})")
            store.set_status(run_id, "running")
        answered = [0]
        if comp.llm is not None:
            comp.llm.ledger.subscribe(_ledger_sink(store, run_id))
            comp.llm.ledger.subscribe(_answered_counter(answered))
        sweep = _Sweep(config, testset, store, run_id, comp, say, progress_bar)
        status = "finished"
        try:
            rankings = sweep.rankings()
            sweep.retrieval_metrics(rankings)
            answers = await sweep.answers(rankings)
            await sweep.judge_all(answers)
            failure = judging_failure(
                group_results(store.judge_results(run_id), [j.name for j in comp.judges])
            )
            if failure is not None:
                raise StageFailedError(failure)
        except BudgetExhausted as exc:
            status = "stopped_budget"
            say(f"budget reached: {exc}; resume with a larger budget to continue")
        except StageFailedError as exc:
            store.set_status(run_id, "failed")
            raise StageFailedError(
                f"{exc}; run {run_id} is stored as failed: fix the cause and run the same "
                "command again to resume it"
            ) from None
        except BaseException:
            store.set_status(run_id, "failed")
            raise
        store.set_status(run_id, status, finished=status == "finished")
    summary = analyse(
        SweepData.from_store(store, run_id),
        ks=config.ks,
        judges=config.judges.names,
        objective=config.objective,
        seed=config.seed,
    )
    return SweepOutcome(
        run_id=run_id,
        status=status,
        resumed=resumed,
        summary=summary,
        counts=store.counts(run_id),
        llm_calls=sweep.budget.session_calls,
        llm_answered=answered[0],
        cached_calls=sweep.budget.session_cached,
        timings=dict(sweep.timings),
    )


def summarise_run(store: RunStore, run_id: str, config: SweepConfig | None = None) -> SweepSummary:
    """The summary of a stored run (its own config unless another objective is given)."""
    m = store.manifest(run_id)
    cfg = config or SweepConfig.model_validate(m.config["full"])
    return analyse(
        SweepData.from_store(store, run_id),
        ks=cfg.ks,
        judges=cfg.judges.names,
        objective=cfg.objective,
        seed=cfg.seed,
    )
