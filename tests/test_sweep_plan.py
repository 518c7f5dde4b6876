"""The sweep's pure plan: what is still missing, deduplicated, with no I/O."""

from __future__ import annotations

from ragjudge.schema import Answer, JudgeInput, JudgeResult, JudgeStatus, TestCase, TokenUsage
from ragjudge.store.base import StoredJudgeResult
from ragjudge.sweep.plan import plan_answers, plan_judging

KS = [1, 2, 3]


class Reads:
    """A judge that reads what it declares; never called by the plan."""

    version = "1"
    backend = "custom"
    requires_reference = False

    def __init__(self, name: str, *, answer: bool, contexts: bool) -> None:
        self.name, self.needs_answer, self.needs_contexts = name, answer, contexts

    async def judge(self, item: JudgeInput) -> JudgeResult:  # pragma: no cover - not called
        raise AssertionError("the plan never judges")


class Prefix(Reads):
    def at_k(self, result: JudgeResult, k: int) -> JudgeResult:
        return result.model_copy(update={"score": k / 10})


CASES = [TestCase(id=f"q{i}", question=f"question {i}?", reference="ref") for i in (1, 2)]


def answer(case: str, k: int, text: str = "same answer", error: str | None = None) -> Answer:
    ids = [f"d{i}" for i in range(k)]
    return Answer(
        case_id=case, k=k, text=text, contexts=ids, context_ids=ids, error=error, generator="g"
    )


def all_answers() -> dict[tuple[str, int], Answer]:
    return {(c.id, k): answer(c.id, k, text=f"answer {c.id}") for c in CASES for k in KS}


def result(case: str, k: int, status: JudgeStatus = JudgeStatus.ok) -> JudgeResult:
    return JudgeResult(
        item_id=f"{case}@k{k}",
        judge="j",
        judge_version="1",
        backend="custom",
        status=status,
        score=0.5 if status == JudgeStatus.ok else None,
    )


def test_answers_missing_per_k_and_failed_ones_renewed():
    stored = [answer("q1", 1), answer("q1", 2, error="boom"), answer("q2", 1)]
    plan = plan_answers(["q1", "q2"], KS, stored)
    assert plan.missing == {2: ["q1", "q2"], 3: ["q1", "q2"]}
    assert set(plan.have) == {("q1", 1), ("q2", 1)}
    assert plan.renewed == {("q1", 2)}


def test_an_answer_only_judge_is_called_once_per_answer_across_k():
    rel = Reads("relevancy", answer=True, contexts=False)
    plan = plan_judging([rel], CASES, KS, all_answers(), [])
    # the answer text does not change with k: one call per case, copies at the other k
    assert plan.calls == 2
    ((k, judge, tasks),) = plan.per_k
    assert k == 1 and judge is rel
    assert {t.case_id: t.also for t in tasks} == {
        "q1": [("q1", 2), ("q1", 3)],
        "q2": [("q2", 2), ("q2", 3)],
    }
    rows = tasks[0].rows(result("q1", 1))
    assert [(r.case_id, r.k) for r in rows] == [("q1", 1), ("q1", 2), ("q1", 3)]
    assert rows[1].result.item_id == "q1@k2" and rows[1].result.usage == TokenUsage()


def test_a_context_judge_is_called_at_every_k_and_a_prefix_judge_once_at_k_max():
    faith = Reads("faithfulness", answer=True, contexts=True)
    recall = Prefix("context_recall", answer=False, contexts=True)
    plan = plan_judging([faith, recall], CASES, KS, all_answers(), [])
    assert [(j.name, [(t.case_id, t.k) for t in ts]) for j, ts in plan.prefix] == [
        ("context_recall", [("q1", 3), ("q2", 3)])
    ]
    assert [(k, j.name, len(ts)) for k, j, ts in plan.per_k] == [
        (1, "faithfulness", 2),
        (2, "faithfulness", 2),
        (3, "faithfulness", 2),
    ]
    assert plan.calls == 8 and not plan.known


def test_a_resumed_plan_copies_stored_results_derives_prefixes_and_retries_transients():
    rel = Reads("relevancy", answer=True, contexts=False)
    recall = Prefix("context_recall", answer=False, contexts=True)
    stored = [
        StoredJudgeResult("q1", 1, "relevancy", result("q1", 1)),
        StoredJudgeResult("q2", 1, "relevancy", result("q2", 1, JudgeStatus.timeout)),
        StoredJudgeResult("q1", 3, "context_recall", result("q1", 3)),
    ]
    plan = plan_judging([rel, recall], CASES, KS, all_answers(), stored)
    known = {(r.case_id, r.k, r.judge): r.result for r in plan.known}
    # q1's k_max recall derived at k = 1, 2 without a call; q1's relevancy copied to k = 2, 3
    assert known[("q1", 1, "context_recall")].score == 0.1
    assert ("q1", 2, "relevancy") in known and ("q1", 3, "relevancy") in known
    # the timed-out q2 is judged again (once, copied to k = 2, 3); q2's recall once at k_max
    assert [(t.case_id, t.k, t.also) for _, _, ts in plan.per_k for t in ts] == [
        ("q2", 1, [("q2", 2), ("q2", 3)])
    ]
    assert [(t.case_id, t.k) for _, ts in plan.prefix for t in ts] == [("q2", 3)]


def test_judgements_of_a_renewed_answer_are_planned_again():
    rel = Reads("relevancy", answer=True, contexts=True)
    stored = [StoredJudgeResult("q1", 2, "relevancy", result("q1", 2))]
    answers = {("q1", 2): answer("q1", 2)}
    assert plan_judging([rel], CASES[:1], KS, answers, stored).calls == 0
    assert plan_judging([rel], CASES[:1], KS, answers, stored, renewed=[("q1", 2)]).calls == 1
