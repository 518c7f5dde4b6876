"""Sweep orchestration with small parts written against the protocols (no model needed):
prefix derivation, de-duplication, resumption without duplicate rows, refusal of a changed
config, and bad k."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import pytest

from ragjudge.errors import ConfigError
from ragjudge.judges.prefix import derive_at_k
from ragjudge.schema import (
    Answer,
    ChunkVerdict,
    Document,
    Evidence,
    JudgeInput,
    JudgeResult,
    JudgeStatus,
    Ranking,
    ScoredDoc,
    TestCase,
    TestSet,
    TokenUsage,
)
from ragjudge.store import open_store
from ragjudge.sweep.components import Components
from ragjudge.sweep.config import SweepConfig
from ragjudge.sweep.run import run_sweep
from ragjudge.text import content_words

TOPICS = ["copper", "iron", "zinc", "tin", "lead", "gold"]


def make_testset() -> TestSet:
    docs = []
    for t in TOPICS:
        docs.append(Document(id=f"{t}-1", text=f"{t.title()} melts at a high temperature."))
        docs.append(Document(id=f"{t}-2", text=f"{t.title()} is mined in many countries."))
    cases = [
        TestCase(
            id=f"q-{t}",
            question=f"Where is {t} mined?",
            reference=f"{t.title()} is mined in many countries.",
            relevant={f"{t}-2": 2},
        )
        for t in TOPICS
    ]
    cases.append(TestCase(id="q-none", question="Who painted the ceiling?"))
    return TestSet(name="metals", documents=docs, cases=cases)


class OverlapRetriever:
    name = "overlap"

    def index(self, documents: Sequence[Document]) -> None:
        self.docs = list(documents)

    def retrieve(self, queries: Mapping[str, str], k: int) -> dict[str, Ranking]:
        out = {}
        for qid, q in queries.items():
            words = set(content_words(q))
            scored = sorted(
                ((len(words & set(content_words(d.text))), d.id) for d in self.docs),
                key=lambda x: (-x[0], x[1]),
            )[:k]
            out[qid] = Ranking(
                query_id=qid, docs=[ScoredDoc(doc_id=d, score=float(s)) for s, d in scored]
            )
        return out


class FirstSentenceGenerator:
    """Answers with the best-overlapping context (so answers repeat across k)."""

    name = "first-sentence"
    version = "1"

    def __init__(self, fail: frozenset[str] = frozenset()) -> None:
        self.fail = fail

    async def generate(self, case: TestCase, contexts: Sequence[Document], k: int) -> Answer:
        if case.id in self.fail:
            raise RuntimeError("generator endpoint down")
        words = set(content_words(case.question))
        best = max(contexts, key=lambda d: len(words & set(content_words(d.text))), default=None)
        return Answer(
            case_id=case.id,
            k=k,
            text=best.text if best else "",
            context_ids=[d.id for d in contexts],
            contexts=[d.text for d in contexts],
            generator=self.name,
        )


class Crash(BaseException):
    """Stands in for the process dying mid-run (raised past every handler)."""


class CountingJudge:
    """Scores word overlap of answer and question; counts calls; can crash after N calls."""

    requires_reference = False
    version = "1"

    def __init__(self, name: str, *, needs_contexts: bool, crash_after: int | None = None):
        self.name = name
        self.needs_contexts = needs_contexts
        self.calls: Counter[str] = Counter()
        self.crash_after = crash_after

    async def judge(self, item: JudgeInput) -> JudgeResult:
        if self.crash_after is not None and sum(self.calls.values()) >= self.crash_after:
            raise Crash
        self.calls[item.id] += 1
        q, a = set(content_words(item.question)), set(content_words(item.answer))
        score = len(q & a) / len(q) if q else 0.0
        return JudgeResult(
            judge=self.name,
            judge_version=self.version,
            backend="custom",
            item_id=item.id,
            score=score,
            status=JudgeStatus.ok,
            usage=TokenUsage(prompt_tokens=10, calls=1),
        )


class ChunkPrecisionJudge:
    """A prefix judge: one verdict per chunk (relevant if it shares a word with the reference)."""

    name = "context_precision"
    version = "1"
    requires_reference = True
    needs_answer = False

    def __init__(self, fail: frozenset[str] = frozenset()) -> None:
        self.calls: Counter[str] = Counter()
        self.fail = fail

    async def judge(self, item: JudgeInput) -> JudgeResult:
        self.calls[item.id] += 1
        if item.id in self.fail:
            return JudgeResult(
                judge=self.name,
                judge_version="1",
                backend="custom",
                item_id=item.id,
                score=None,
                status=JudgeStatus.timeout,
                error="endpoint timed out",
            )
        if not item.reference:
            return JudgeResult(
                judge=self.name,
                judge_version="1",
                backend="custom",
                item_id=item.id,
                score=None,
                status=JudgeStatus.skipped_missing_reference,
            )
        ref = set(content_words(item.reference))
        chunks = [
            ChunkVerdict(index=i, relevant=len(ref & set(content_words(c))) >= 3)
            for i, c in enumerate(item.contexts)
        ]
        full = JudgeResult(
            judge=self.name,
            judge_version="1",
            backend="custom",
            item_id=item.id,
            score=0.0,
            status=JudgeStatus.ok,
            evidence=Evidence(chunks=chunks),
            usage=TokenUsage(prompt_tokens=50, calls=1),
        )
        return derive_at_k(full, len(chunks))

    def at_k(self, result: JudgeResult, k: int) -> JudgeResult:
        return derive_at_k(result, k)


def config(**over) -> SweepConfig:
    data = {
        "dataset": {"path": "unused"},
        "judges": {"names": ["answer_relevancy", "faithfulness", "context_precision"]},
        "ks": [1, 2, 3, 4],
        "concurrency": 3,
    }
    return SweepConfig.model_validate(data | over)


def parts(crash_after: int | None = None, fail: frozenset[str] = frozenset()) -> Components:
    return Components(
        retriever=OverlapRetriever(),
        generator=FirstSentenceGenerator(),
        judges=[
            CountingJudge("answer_relevancy", needs_contexts=False),
            CountingJudge("faithfulness", needs_contexts=True, crash_after=crash_after),
            ChunkPrecisionJudge(fail),
        ],
        models={"generator": "first-sentence@1"},
    )


def test_sweep_reuses_prefix_and_identical_inputs(tmp_path):
    store = open_store(tmp_path / "runs.sqlite")
    comp = parts()
    out = run_sweep(config(), store=store, components=comp, testset=make_testset())
    n_cases, ks = 7, 4
    assert out.status == "finished" and not out.resumed
    assert out.counts["answers"] == n_cases * ks
    assert out.counts["judge_results"] == 3 * n_cases * ks
    assert out.counts["rankings"] == n_cases
    # 6 judged cases x 4 k x 5 metrics (q-none has no qrels, so no retrieval metrics)
    assert out.counts["retrieval_metrics"] == 6 * ks * 5

    relevancy, faithfulness, precision = comp.judges
    # the prefix judge ran once per case, at k_max only (a case without a reference stops at
    # the shared pre-check: skipped_missing_reference without a call)
    assert set(precision.calls) == {f"{c.id}@k4" for c in make_testset().cases if c.reference}
    assert all(n == 1 for n in precision.calls.values())
    # relevancy reads question + answer only: the generator repeats its answer across k here,
    # so each case is judged once; faithfulness also reads the contexts: once per (case, k)
    assert sum(relevancy.calls.values()) == n_cases
    assert sum(faithfulness.calls.values()) == n_cases * ks

    rows = store.judge_results(out.run_id)
    by = {(r.judge, r.case_id, r.k): r.result for r in rows}
    # derived precision equals AP over the prefix; copied rows carry no usage
    full = by[("context_precision", "q-copper", 4)]
    assert by[("context_precision", "q-copper", 1)].score == derive_at_k(full, 1).score
    assert by[("context_precision", "q-copper", 1)].item_id == "q-copper@k1"
    assert by[("context_precision", "q-copper", 1)].usage == TokenUsage()
    assert full.usage.calls == 1
    stored_calls = sum(r.result.usage.calls for r in rows)
    # every judge call is stored once with its usage (q-none stopped at the pre-check)
    assert stored_calls == sum(sum(j.calls.values()) for j in comp.judges)
    assert by[("context_precision", "q-none", 2)].status == JudgeStatus.skipped_missing_reference
    s = out.summary
    assert s.choice.best_k in s.ks and s.choice.n_cases == n_cases
    assert {m.metric for m in s.metrics} >= {"faithfulness", "ndcg", "recall", "objective"}


def test_crashed_run_resumes_without_duplicates_or_repeated_work(tmp_path):
    store = open_store(tmp_path / "runs.sqlite")
    crashing = parts(crash_after=10)
    with pytest.raises(Crash):
        run_sweep(config(), store=store, components=crashing, testset=make_testset())
    (m,) = store.list_runs()
    assert m.status == "failed"
    done_before = store.counts(m.run_id)["judge_results"]
    assert 0 < done_before < 3 * 7 * 4

    again = parts()
    out = run_sweep(config(), store=store, components=again, testset=make_testset())
    assert out.resumed and out.run_id == m.run_id and out.status == "finished"
    assert out.counts["judge_results"] == 3 * 7 * 4
    assert out.counts["answers"] == 7 * 4
    # nothing judged twice across the two processes
    before = crashing.judges[1].calls
    after = again.judges[1].calls
    assert not set(before) & set(after)
    assert sum(before.values()) + sum(after.values()) == 7 * 4
    assert sum(again.judges[2].calls.values()) == 0  # prefix judge finished before the crash


def test_resume_refuses_a_changed_config_and_names_the_change(tmp_path):
    store = open_store(tmp_path / "runs.sqlite")
    out = run_sweep(config(), store=store, components=parts(), testset=make_testset())
    with pytest.raises(ConfigError) as exc:
        run_sweep(
            config(ks=[1, 2, 3], judges={"names": ["faithfulness"]}),
            store=store,
            components=parts(),
            testset=make_testset(),
            resume=out.run_id,
        )
    msg = str(exc.value)
    assert f"refusing to resume run {out.run_id}" in msg
    assert "definition.ks: [1, 2, 3, 4] -> [1, 2, 3]" in msg
    assert "definition.judges.names" in msg
    # execution settings may change on resume
    ok = run_sweep(
        config(concurrency=1),
        store=store,
        components=parts(),
        testset=make_testset(),
        resume=out.run_id,
    )
    assert ok.run_id == out.run_id and ok.counts == out.counts


def test_k_above_the_corpus_is_refused(tmp_path):
    store = open_store(tmp_path / "runs.sqlite")
    with pytest.raises(
        ConfigError, match="k = 20 is above the retrievable count: the corpus has 12"
    ):
        run_sweep(config(ks=[1, 20]), store=store, components=parts(), testset=make_testset())
    bad = config(rerankers=[{"spec": "prune", "depth": 3}])
    with pytest.raises(ConfigError, match="keeps only depth = 3 documents, fewer than the largest"):
        run_sweep(bad, store=store, components=parts(), testset=make_testset())


def test_transient_failures_are_stored_at_every_k_and_retried_on_resume(tmp_path):
    store = open_store(tmp_path / "runs.sqlite")
    out = run_sweep(
        config(),
        store=store,
        components=parts(fail=frozenset({"q-iron@k4"})),
        testset=make_testset(),
    )
    rows = [r for r in store.judge_results(out.run_id) if r.judge == "context_precision"]
    iron = {r.k: r.result for r in rows if r.case_id == "q-iron"}
    assert sorted(iron) == [1, 2, 3, 4]
    assert {r.status for r in iron.values()} == {JudgeStatus.timeout}
    assert iron[2].item_id == "q-iron@k2"
    agg = out.summary.table("judge")["context_precision"][2]
    assert agg.status_counts["timeout"] == 1 and agg.n_scored == 5  # 7 cases - timeout - no ref

    again = parts()
    done = run_sweep(
        config(), store=store, components=again, testset=make_testset(), resume=out.run_id
    )
    assert dict(again.judges[2].calls) == {"q-iron@k4": 1}  # only the failed one, once
    iron = {
        r.k: r.result
        for r in store.judge_results(done.run_id)
        if r.judge == "context_precision" and r.case_id == "q-iron"
    }
    assert {r.status for r in iron.values()} == {JudgeStatus.ok}
    assert done.counts["judge_results"] == out.counts["judge_results"]


def test_failed_generation_is_generated_and_judged_again_on_resume(tmp_path):
    store = open_store(tmp_path / "runs.sqlite")
    broken = parts()
    broken.generator = FirstSentenceGenerator(fail=frozenset({"q-tin"}))
    out = run_sweep(config(), store=store, components=broken, testset=make_testset())
    tin = [a for a in store.answers(out.run_id) if a.case_id == "q-tin"]
    assert len(tin) == 4 and all(a.error and "endpoint down" in a.error for a in tin)
    faith = {
        r.k: r.result
        for r in store.judge_results(out.run_id)
        if r.case_id == "q-tin" and r.judge == "faithfulness"
    }
    assert faith[1].status == JudgeStatus.invalid_input  # the shared pre-check: empty answer

    fixed = parts()
    run_sweep(config(), store=store, components=fixed, testset=make_testset(), resume=out.run_id)
    tin = [a for a in store.answers(out.run_id) if a.case_id == "q-tin"]
    assert all(a.error is None and "Tin is mined" in a.text for a in tin)
    assert set(fixed.judges[1].calls) == {f"q-tin@k{k}" for k in (1, 2, 3, 4)}
    faith = {
        r.k: r.result
        for r in store.judge_results(out.run_id)
        if r.case_id == "q-tin" and r.judge == "faithfulness"
    }
    assert faith[1].score == 1.0
