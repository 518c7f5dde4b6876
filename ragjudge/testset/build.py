"""Building a test set: plan seeds per question type, write candidates, filter, grade.

For each type, in waves of ``oversample`` x as many candidates as questions are still missing
(1 for an LLM writer, so no call is spent on a surplus; more for the cheap template writer, which
often finds no template in a passage):

1. a writer (``writers``) makes one candidate per seed: a passage, or for ``multi_passage`` and
   ``comparison`` a pair of neighbours (``pairs``) among at most ``PAIR_POOL`` passages;
2. filters, cheapest first (``models.FILTERS``): ``form``, ``copy`` and ``leak`` (``filters``),
   ``duplicate`` (bundled MiniLM cosine >= ``Thresholds.duplicate`` against every question
   kept so far), then ``source_check``, a judge call: the support judge judges the reference
   (as the answer) against the source passages, and the candidate is kept when its support
   ``(supported + 0.5 * partial) / claims`` (``support_of``) is >= ``min_support``; an
   unanswerable question is kept when the relevance judge finds none of the
   ``UNANSWERABLE_DEPTH`` passages BM25 retrieves for it relevant (``Evidence.chunks``);
3. grading: source passages get 3; among the ``GRADE_DEPTH`` other passages BM25 ranks first
   for question + reference, those holding a key term of the answer that the question lacks
   are judged by the support judge alone: support >= ``grade_full`` gives 2, >=
   ``grade_partial`` gives 1.

Count: a type whose seeds run out before its quota is full leaves the rest to the other types:
after every type had its turn, the shortfall is asked again of each type in mix order (types of
weight 0 excepted), each continuing from the seed it stopped at, until ``n`` are kept or every
seed was tried; the notes say which types gave fewer and which made up for them, or why ``n``
could not be reached.

Judges (any ``Judge``): with an LLM, the faithfulness judge (support) and the context-precision
judge asked with ``prompts/testset/answered`` (relevance: does a passage state what is asked,
not merely share its subject); offline, ``overlap.OverlapJudge`` for both.

Coverage (LLM backend): a build that ends, not stopped by its budget, with the writer or a
judge below the coverage floor (``ragjudge.judges.coverage.coverage_problem``: made / called for
the writer, decided / called for a judge; every call failing is always below it) raises
``StageFailedError`` naming it, its coverage and its commonest failure status with a count
(``ragjudge testset`` exits 2); nothing is written. It fails fast: while the writer has made
no candidate, or a judge that was called has decided nothing, a wave holds at most
``FAIL_FAST`` candidates, and once such a stage has ``FAIL_FAST`` calls without one success
the build stops there with that line, instead of trying every seed first (an endpoint whose
every reply fails costs ``FAIL_FAST`` writes, not one per seed).

Budget: before each wave, the calls (and cost) already sent through the client's ledger plus
the wave's estimate (candidates x the most calls one candidate can take: 2 + ``GRADE_DEPTH``,
or more once one has taken more) must fit
``max_calls`` / ``max_cost_usd``; otherwise the build stops with what it kept (status
``stopped_budget``). Resume: calls are cached (``ragjudge.llm``) and seeds are fixed by
``seed``, so running the same build again repeats finished calls from the cache for free.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ragjudge import __version__
from ragjudge.errors import DataError
from ragjudge.schema import Document, JudgeInput, JudgeResult, TestCase, TestSet, TokenUsage
from ragjudge.text import content_words, numbers, tokens

from . import filters, templates
from .corpus import MIN_WORDS, Corpus
from .mix import MULTI_SOURCE, QUESTION_TYPES, quotas
from .models import TEMPLATE_NOTE, Candidate, FilterReport, Item, Manifest, TestsetBuild
from .writers import QuestionWriter

if TYPE_CHECKING:
    from ragjudge.protocols import Encoder, Judge
    from ragjudge.retrieval.bm25 import BM25Retriever

GRADE_DEPTH = 3
UNANSWERABLE_DEPTH = 3
NEIGHBOURS = 5
ENCODE_BATCH = 64
PAIR_POOL = 1000
"""Most passages encoded to find pairs for two-passage questions: the work does not grow with
the corpus (SciFact's 5,183 abstracts took minutes to encode for a few pairs)."""
FAIL_FAST = 8
"""Calls after which a stage (the writer, a judge) that has not succeeded once ends an LLM
build (module docstring, "Coverage")."""


@dataclass(frozen=True)
class Thresholds:
    min_support: float = 0.75
    duplicate: float = 0.92
    copy: float = filters.COPY_THRESHOLD
    leak: float = filters.LEAK_THRESHOLD
    grade_full: float = 0.75
    grade_partial: float = 0.35


@dataclass
class Budget:
    """Limits on LLM calls sent and their cost (None: no limit)."""

    max_calls: int | None = None
    max_cost_usd: float | None = None


class BudgetStop(Exception):
    """No further wave fits the budget."""


def pairs(
    passages: Sequence[Document], vectors: np.ndarray, rng: random.Random
) -> list[tuple[int, int]]:
    """One partner per passage: among its ``NEIGHBOURS`` nearest passages (cosine), the
    nearest that shares a name with it, else the nearest at cosine >= 0.5. Pairs are
    unordered and unique; their order is shuffled by ``rng``."""
    if len(passages) < 2:
        return []
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -1.0)
    names = [set(templates.names(d.text)) for d in passages]
    out: dict[tuple[int, int], None] = {}
    for i in range(len(passages)):
        near = [int(j) for j in np.argsort(-sims[i], kind="stable")[:NEIGHBOURS]]
        shared = [j for j in near if names[i] & names[j]]
        pick = shared[0] if shared else (near[0] if sims[i, near[0]] >= 0.5 else None)
        if pick is not None:
            out[(min(i, pick), max(i, pick))] = None
    found = list(out)
    rng.shuffle(found)
    return found


def support_of(result: JudgeResult) -> float:
    """(supported + 0.5 * partial) / claims from a judge's claim verdicts (its score when it
    lists none): the same reading for every judge, whatever its score's scale."""
    claims = result.evidence.claims
    if not claims:
        return float(result.score or 0.0)
    credit = {"supported": 1.0, "partial": 0.5}
    return sum(credit.get(c.verdict, 0.0) for c in claims) / len(claims)


class Builder:
    """One build: the corpus, writer, judges, encoder and BM25 index it shares across waves."""

    def __init__(
        self,
        corpus: Corpus,
        writer: QuestionWriter,
        *,
        support: Judge,
        relevance: Judge,
        encoder: Encoder,
        retriever: BM25Retriever,
        usage: Callable[[], TokenUsage],
        thresholds: Thresholds,
        budget: Budget,
        seed: int,
        oversample: int,
        progress: Callable[[str], None] | None,
        fail_fast: bool = False,
    ) -> None:
        self.corpus = corpus
        self.passages = corpus.usable()
        self.text = {d.id: d.text for d in corpus.documents}
        self.writer = writer
        self.support = support
        self.relevance = relevance
        self.encoder = encoder
        self.retriever = retriever
        self.usage = usage
        self.t = thresholds
        self.budget = budget
        self.seed = seed
        self.oversample = oversample
        self.fail_fast = fail_fast
        """An LLM build: stop at a stage without a success after ``FAIL_FAST`` calls."""
        self.progress = progress or (lambda _m: None)
        self.report = FilterReport()
        self.judged: dict[str, list[JudgeResult]] = {}
        """Judge name -> the results of its calls (source checks and grades), for coverage."""
        self.writes = 0
        self.write_failures: list[tuple[str, str | None]] = []
        """(status, reason) of each write that made no candidate."""
        self.names = filters.Names(
            [d.id for d in corpus.documents] + [d.doc_id for d in corpus.documents]
        )
        self.position: dict[str, int] = {}
        """Per type, the next seed to write from (a later wave continues there)."""
        self._seeds: dict[str, list[list[Document]]] = {}
        self.kept: list[Candidate] = []
        self.relevant: list[dict[str, int]] = []
        self.kept_vectors: list[np.ndarray] = []
        self.passage_vectors: np.ndarray | None = None
        self.pool = self.passages
        """The passages two-passage questions pair (at most ``PAIR_POOL``, drawn by ``seed``)."""
        if len(self.passages) > PAIR_POOL:
            self.pool = random.Random(f"{seed}:pool").sample(self.passages, PAIR_POOL)
        self.calls_per_candidate = 2 + GRADE_DEPTH
        """Most LLM calls one candidate may take (writing, checking, grading), raised to the most
        one has taken (repair calls add to it)."""

    # -------------------------------------------------------------------------- planning

    def seeds(self, qtype: str) -> list[list[Document]]:
        if qtype not in self._seeds:
            self._seeds[qtype] = self._plan(qtype)
        return self._seeds[qtype]

    def exhausted(self, qtype: str) -> bool:
        return self.position.get(qtype, 0) >= len(self.seeds(qtype))

    def _plan(self, qtype: str) -> list[list[Document]]:
        rng = random.Random(f"{self.seed}:{qtype}")
        if qtype in MULTI_SOURCE:
            if self.passage_vectors is None:
                self.passage_vectors = self._encode_passages()
            return [
                [self.pool[i], self.pool[j]] for i, j in pairs(self.pool, self.passage_vectors, rng)
            ]
        order = list(self.passages)
        rng.shuffle(order)
        return [[d] for d in order]

    def _encode_passages(self) -> np.ndarray:
        """Vectors of the passages asked about (to pair neighbours), with a progress bar."""
        from ragjudge.retrieval.progress import progress_bar

        texts = [d.text for d in self.pool]
        parts = []
        with progress_bar(f"encoding {len(texts)} passages", len(texts)) as advance:
            for start in range(0, len(texts), ENCODE_BATCH):
                parts.append(self.encoder.encode(texts[start : start + ENCODE_BATCH]))
                advance(len(parts[-1]))
        return np.concatenate(parts) if parts else np.zeros((0, 0))

    def _check_budget(self, size: int) -> int:
        """How many candidates of a wave of ``size`` fit the budget (raises when none)."""
        spent = self.usage()
        fit = size
        if self.budget.max_calls is not None:
            fit = min(fit, (self.budget.max_calls - spent.calls) // self.calls_per_candidate)
        if self.budget.max_cost_usd is not None and spent.calls:
            per = spent.cost_usd / spent.calls * self.calls_per_candidate
            if per > 0:
                fit = min(fit, int((self.budget.max_cost_usd - spent.cost_usd) // per))
        if fit <= 0:
            raise BudgetStop(
                f"budget reached: {spent.calls} LLM calls sent (${spent.cost_usd:.4f}); "
                f"limits max_calls={self.budget.max_calls}, max_cost_usd={self.budget.max_cost_usd}"
            )
        return fit

    # -------------------------------------------------------------------------- filters

    def _cheap(self, c: Candidate, batch_vecs: list[np.ndarray], vec: np.ndarray) -> str | None:
        problem = filters.form_problem(c.question, self.names)
        if problem is not None:
            c.scores["form"] = 0.0
            return "form"
        sources = [self.text[s] for s in c.sources]
        c.scores["copy"] = filters.copy_score(c.question, sources)
        if c.scores["copy"] >= self.t.copy:
            return "copy"
        if c.qtype not in ("unanswerable", "comparison"):
            c.scores["leak"] = filters.leak_score(c.question, c.short_answer, c.reference)
            if c.scores["leak"] >= self.t.leak:
                return "leak"
        others = [*self.kept_vectors, *batch_vecs]
        sim = float(np.max(np.stack(others) @ vec)) if others else 0.0
        c.scores["duplicate"] = sim
        if sim >= self.t.duplicate:
            return "duplicate"
        return None

    async def _source_check(self, i: int, c: Candidate) -> bool:
        if c.qtype == "unanswerable":
            hits = self.retriever.retrieve({"q": c.question}, UNANSWERABLE_DEPTH)["q"].docs
            item = JudgeInput(
                id=f"cand-{i}",
                question=c.question,
                answer=c.reference,
                contexts=[self.text[h.doc_id] for h in hits],
            )
            res = self._judged(await self.relevance.judge(item))
            c.usage = c.usage + res.usage
            answered = sum(ch.relevant for ch in res.evidence.chunks)
            c.scores["answered_by_corpus"] = float(answered)
            if res.status != "ok":
                self.report.judge_errors += 1
                return False
            return answered == 0
        item = JudgeInput(
            id=f"cand-{i}",
            question=c.question,
            answer=c.reference,
            contexts=[self.text[s] for s in c.sources],
        )
        res = self._judged(await self.support.judge(item))
        c.usage = c.usage + res.usage
        support = support_of(res)
        c.scores["support"] = support
        if res.status != "ok":
            self.report.judge_errors += 1
            return False
        return support >= self.t.min_support

    async def _grade(self, i: int, c: Candidate) -> dict[str, int]:
        grades = dict.fromkeys(c.sources, 3)
        if c.qtype == "unanswerable":
            return {}
        query = f"{c.question} {c.reference}"
        hits = self.retriever.retrieve({"q": query}, GRADE_DEPTH + len(c.sources))["q"].docs
        others = [h.doc_id for h in hits if h.doc_id not in grades][:GRADE_DEPTH]
        terms = filters.key_terms(c.short_answer, c.reference) - set(content_words(c.question))
        judged = []
        for doc_id in others:
            words = set(content_words(self.text[doc_id])) | numbers(self.text[doc_id])
            if terms and terms & words:
                judged.append(doc_id)
        results = await asyncio.gather(
            *(
                self.support.judge(
                    JudgeInput(
                        id=f"grade-{i}-{d}",
                        question=c.question,
                        answer=c.reference,
                        contexts=[self.text[d]],
                    )
                )
                for d in judged
            )
        )
        for doc_id, res in zip(judged, results, strict=True):
            self._judged(res)
            c.usage = c.usage + res.usage
            score = support_of(res) if res.status == "ok" else 0.0
            if score >= self.t.grade_full:
                grades[doc_id] = 2
            elif score >= self.t.grade_partial:
                grades[doc_id] = 1
        return grades

    def _judged(self, res: JudgeResult) -> JudgeResult:
        self.judged.setdefault(res.judge, []).append(res)
        return res

    def coverage_failure(self, writer: str) -> str | None:
        """The one line naming the writer or judge below the coverage floor, or None."""
        from ragjudge.judges.coverage import coverage_floor, coverage_problem, judging_failure

        floor = coverage_floor()
        made = self.writes - len(self.write_failures)
        line = coverage_problem(
            f"question writer {writer}", made, self.writes, self.write_failures, floor, "wrote"
        )
        judges = judging_failure(self.judged, floor)
        if line is None and judges is None:
            return None
        parts = [f"test-set generation failed: {line}" if line else "", judges or ""]
        return " ".join("; ".join(p for p in parts if p).split())

    def _unproven(self) -> list[tuple[str, int]]:
        """(stage, calls) of the writer and each judge called so far that has not succeeded
        once (the writer: no candidate made; a judge: nothing decided)."""
        from ragjudge.judges.coverage import NO_CALL, decided

        stages = [("writer", self.writes)] if self.writes == len(self.write_failures) else []
        for name, rs in self.judged.items():
            called = [r for r in rs if r.status not in NO_CALL]
            if called and not any(decided(r) for r in called):
                stages.append((name, len(called)))
        return stages

    def _check_hopeless(self, writer: str) -> None:
        """Raise ``StageFailedError`` (the coverage line) when a stage of an LLM build made
        ``FAIL_FAST`` calls without one success."""
        if not self.fail_fast:
            return
        spent = [(stage, calls) for stage, calls in self._unproven() if calls >= FAIL_FAST]
        if spent:
            from ragjudge.judges.coverage import StageFailedError

            line = self.coverage_failure(writer) or f"{spent[0][0]} made no success"
            raise StageFailedError(
                f"{line} (stopped after {spent[0][1]} calls of {spent[0][0]} without a success)"
            )

    # -------------------------------------------------------------------------- waves

    async def fill(self, qtype: str, quota: int) -> int:
        """Keep up to ``quota`` more questions of ``qtype``; returns how many were kept."""
        seeds = self.seeds(qtype)
        pos = self.position.get(qtype, 0)
        need = quota
        while need > 0 and pos < len(seeds):
            size = min(need * self.oversample, len(seeds) - pos)
            if self.fail_fast and self._unproven():
                size = min(size, FAIL_FAST)
            size = self._check_budget(size)
            batch = seeds[pos : pos + size]
            written = await asyncio.gather(
                *(
                    self.writer.write(qtype, ps, random.Random(f"{self.seed}:{qtype}:{pos + k}"))
                    for k, ps in enumerate(batch)
                )
            )
            pos += size
            self.position[qtype] = pos
            made = [c for c, _ in written if c is not None]
            self.writes += len(written)
            for c, why in written:
                self.report.add("generated" if c is not None else "failed", qtype)
                if c is None:
                    status, _, text = (why or "failed").partition(": ")
                    self.write_failures.append((status, text or None))
            vecs: list[np.ndarray] = list(self.encoder.encode([c.question for c in made]))
            survivors: list[tuple[Candidate, np.ndarray]] = []
            for c, v in zip(made, vecs, strict=True):
                why = self._cheap(c, [s[1] for s in survivors], v)
                if why is not None:
                    self.report.remove(why, qtype)
                else:
                    survivors.append((c, v))
            base = pos * 1000
            checks = await asyncio.gather(
                *(self._source_check(base + k, c) for k, (c, _) in enumerate(survivors))
            )
            passed: list[tuple[Candidate, np.ndarray]] = []
            for (c, v), ok in zip(survivors, checks, strict=True):
                if not ok:
                    self.report.remove("source_check", qtype)
                elif len(passed) < need:
                    passed.append((c, v))
                else:
                    self.report.add("unused", qtype)
            grades = await asyncio.gather(
                *(self._grade(base + k, c) for k, (c, _) in enumerate(passed))
            )
            for (c, v), g in zip(passed, grades, strict=True):
                self.kept.append(c)
                self.relevant.append(g)
                self.kept_vectors.append(v)
                self.report.add("kept", qtype)
            need -= len(passed)
            for c in made:
                self.calls_per_candidate = max(self.calls_per_candidate, c.usage.calls)
            self.progress(
                f"{qtype}: kept {quota - need} of {quota} ({pos} of {len(seeds)} seeds used)"
            )
            self._check_hopeless(self.writer.name)
        return quota - need


def check_corpus(corpus: Corpus, n: int) -> list[str]:
    """Notes on a corpus too small for ``n`` questions; a corpus with no usable passage is a
    ``DataError``."""
    usable = corpus.usable()
    notes = []
    if not usable:
        longest = max(len(tokens(d.text)) for d in corpus.documents)
        raise DataError(
            f"no passage is long enough to ask about: {len(corpus.documents)} passages, the "
            f"longest has {longest} words, at least {MIN_WORDS} are needed"
        )
    if corpus.short():
        notes.append(
            f"{corpus.short()} passages with fewer than {MIN_WORDS} words were not asked about"
        )
    notes.extend(corpus.notes())
    if len(usable) < n:
        notes.append(
            f"the corpus has {len(usable)} passages to ask about for {n} requested "
            "questions: generating what it allows"
        )
    return notes


async def run_build(
    corpus: Corpus,
    n: int,
    *,
    backend: Literal["offline", "llm"],
    writer: QuestionWriter,
    support: Judge,
    relevance: Judge,
    usage: Callable[[], TokenUsage],
    mix: dict[str, float],
    seed: int = 0,
    thresholds: Thresholds | None = None,
    budget: Budget | None = None,
    progress: Callable[[str], None] | None = None,
    encoder: Encoder | None = None,
    oversample: int = 1,
) -> TestsetBuild:
    """Build a test set of up to ``n`` questions from ``corpus`` (see the module docstring)."""
    from ragjudge.embedding import load_encoder
    from ragjudge.judges.coverage import coverage_floor
    from ragjudge.retrieval.bm25 import BM25Retriever

    coverage_floor()  # a bad floor is refused before any work, not after the calls are paid
    notes = check_corpus(corpus, n)
    for note in notes:
        if progress:
            progress(f"note: {note}")
    retriever = BM25Retriever()
    retriever.index(corpus.documents)
    b = Builder(
        corpus,
        writer,
        support=support,
        relevance=relevance,
        encoder=encoder or load_encoder(),
        retriever=retriever,
        usage=usage,
        thresholds=thresholds or Thresholds(),
        budget=budget or Budget(),
        seed=seed,
        oversample=oversample,
        progress=progress,
        fail_fast=backend == "llm",
    )
    want = quotas(mix, n)
    status: Literal["finished", "stopped_budget"] = "finished"
    extra: dict[str, int] = {}
    # every type's quota, before any is filled: a budget stop keeps the whole request
    b.report.requested.update({qtype: want[qtype] for qtype in QUESTION_TYPES})
    try:
        for qtype in QUESTION_TYPES:
            if want[qtype]:
                await b.fill(qtype, want[qtype])
        # the shortfall of types whose seeds ran out, asked of the others (module docstring)
        order = [t for t in QUESTION_TYPES if mix.get(t, 0) > 0]
        while (short := n - len(b.kept)) > 0 and not all(b.exhausted(t) for t in order):
            for qtype in order:
                if (short := n - len(b.kept)) > 0 and not b.exhausted(qtype):
                    got = await b.fill(qtype, short)
                    extra[qtype] = extra.get(qtype, 0) + got
    except BudgetStop as stop:
        status = "stopped_budget"
        notes.append(str(stop))
    if backend == "llm" and status == "finished":
        failure = b.coverage_failure(writer.name)
        if failure is not None:
            from ragjudge.judges.coverage import StageFailedError

            raise StageFailedError(failure)
    if backend == "offline":
        notes.insert(0, TEMPLATE_NOTE)
    kept = len(b.kept)
    gave = {t: b.report.kept.get(t, 0) for t in QUESTION_TYPES}
    fewer = ", ".join(f"{t} {gave[t]} of {want[t]}" for t in QUESTION_TYPES if gave[t] < want[t])
    more = ", ".join(f"{t} {k}" for t, k in extra.items() if k > 0)
    if fewer and more and status == "finished":
        notes.append(
            f"some types found too few questions ({fewer}); others made up for them ({more})"
        )
    if kept < n and status == "finished":
        notes.append(
            f"kept {kept} of {n} requested questions: every passage was tried for every type of "
            f"the mix, and the others gave no question that passed the filters (short: {fewer})"
        )
    items = [
        Item(id=f"syn-{i + 1:04d}", candidate=c, relevant=r)
        for i, (c, r) in enumerate(zip(b.kept, b.relevant, strict=True))
    ]
    manifest = Manifest(
        ragjudge_version=__version__,
        corpus=corpus.name,
        backend=backend,
        generator=writer.name,
        prompts=writer.prompts,
        judges={
            "support": f"{support.name}@{support.version}",
            "relevance": f"{relevance.name}@{relevance.version}",
        },
        seed=seed,
        n_requested=n,
        mix=mix,
        thresholds=vars(b.t),
        report=b.report,
        status=status,
        usage=usage(),
        notes=notes,
    )
    return TestsetBuild(testset=to_testset(corpus, items), items=items, manifest=manifest)


def to_testset(corpus: Corpus, items: Sequence[Item]) -> TestSet:
    """The ``TestSet`` the sweep takes: the corpus and one case per item."""
    cases = []
    for it in items:
        row: dict[str, Any] = it.query_row()
        cases.append(
            TestCase(
                id=it.id,
                question=row["text"],
                reference=row["reference"],
                relevant=it.relevant,
                metadata=row["metadata"],
            )
        )
    return TestSet(name=f"testset-{corpus.name}", documents=corpus.documents, cases=cases)
