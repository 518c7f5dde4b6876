"""What a sweep still has to compute, as a pure plan (no I/O): the answers missing at each k and
the judge calls missing for each (judge, k, case), given what the run store already holds.

The two facts that make a sweep cheap are applied here:

- Prefix judges (``PrefixJudge``, e.g. context recall and precision) are planned once per case
  at k_max; their result at a smaller k is ``judge.at_k(result, k)`` (``prefix_rows``).
- Identical judge inputs are judged once. The key is what the judge reads (``judge_key``:
  question and reference, plus the answer if ``needs_answer``, plus the contexts if
  ``needs_contexts``), so answer relevancy of an answer repeated at two k is one call. A key
  already stored (a resumed run) is copied, not judged; a key met again at a later k becomes a
  copy target of the task at its first k (``JudgeTask.also``). A copied row has zero usage, so
  the stored usage sums to what was spent.

A stored result whose status is transient or a judge's own crash (``RETRYABLE``) or whose
answer was generated again (``renewed``) counts as missing: a resumed run judges it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragjudge.judges.base import is_prefix
from ragjudge.protocols import Judge
from ragjudge.schema import Answer, JudgeInput, JudgeResult, JudgeStatus, TestCase, TokenUsage
from ragjudge.store.base import StoredJudgeResult, item_id
from ragjudge.sweep.config import hash_json

RETRYABLE = frozenset(
    {
        JudgeStatus.timeout,
        JudgeStatus.rate_limited,
        JudgeStatus.provider_error,
        JudgeStatus.judge_error,
        JudgeStatus.skipped_budget,
    }
)
"""Statuses of a transient failure, or of a judge whose own code raised (its fix may keep its
version): a resumed run judges such an item again."""

AnswerMap = Mapping[tuple[str, int], Answer]


@dataclass(frozen=True)
class AnswerPlan:
    """The answers a run holds and the (case, k) it must still generate."""

    have: dict[tuple[str, int], Answer]
    """Stored answers without an error, by (case id, k)."""
    missing: dict[int, list[str]]
    """k -> the case ids without a usable answer at k (k in sweep order, empty lists left out)."""
    renewed: frozenset[tuple[str, int]]
    """(case, k) whose stored answer failed: generated again, so their judgements are stale."""


def plan_answers(
    case_ids: Sequence[str], ks: Sequence[int], stored: Iterable[Answer]
) -> AnswerPlan:
    """Which answers to generate: every (case, k) without a stored answer free of errors."""
    stored = list(stored)
    have = {(a.case_id, a.k): a for a in stored if a.error is None}
    missing = {k: [c for c in case_ids if (c, k) not in have] for k in ks}
    return AnswerPlan(
        have=have,
        missing={k: ids for k, ids in missing.items() if ids},
        renewed=frozenset((a.case_id, a.k) for a in stored if a.error is not None),
    )


def judge_input(case: TestCase, answer: Answer, k: int) -> JudgeInput:
    """The item a judge reads for ``case`` answered from its top-``k`` contexts."""
    return JudgeInput(
        id=item_id(case.id, k),
        question=case.question,
        answer=answer.text,
        contexts=list(answer.contexts),
        context_ids=list(answer.context_ids),
        reference=case.reference,
    )


def judge_key(judge: Judge, item: JudgeInput) -> str:
    """What the judge reads from ``item`` (its declarations), hashed: identical keys get
    identical results."""
    parts: dict[str, Any] = {"judge": judge.name, "q": item.question, "ref": item.reference}
    if judge.needs_answer:
        parts["a"] = item.answer
    if judge.needs_contexts:
        parts["c"] = item.contexts
    return hash_json(parts)


def copy_result(result: JudgeResult, case_id: str, k: int) -> JudgeResult:
    """A result reused for another item: its id, and no usage (the cost was paid once)."""
    return result.model_copy(update={"item_id": item_id(case_id, k), "usage": TokenUsage()})


def prefix_rows(
    judge: Judge, case_id: str, full: JudgeResult, ks: Sequence[int]
) -> list[StoredJudgeResult]:
    """The k_max result of a prefix judge and its derivation at every smaller k. A failed
    judgement is stored at every k with its status (and, if transient, judged again on
    resume)."""
    rows = [StoredJudgeResult(case_id, ks[-1], judge.name, full)]
    at_k = judge.at_k if full.status == JudgeStatus.ok else None  # type: ignore[attr-defined]
    rows += [
        StoredJudgeResult(
            case_id, k, judge.name, copy_result(at_k(full, k) if at_k else full, case_id, k)
        )
        for k in ks[:-1]
    ]
    return rows


@dataclass
class JudgeTask:
    """One judge call: ``item`` for ``case_id`` at ``k``; its result is also stored (as a copy)
    for every (case, k) in ``also``, which have the same judge key."""

    judge: Judge
    case_id: str
    k: int
    item: JudgeInput
    also: list[tuple[str, int]] = field(default_factory=list)

    def rows(self, result: JudgeResult) -> list[StoredJudgeResult]:
        """The stored rows of ``result``: this item's and one copy per ``also`` target."""
        name = self.judge.name
        return [StoredJudgeResult(self.case_id, self.k, name, result)] + [
            StoredJudgeResult(c, k, name, copy_result(result, c, k)) for c, k in self.also
        ]


@dataclass
class JudgePlan:
    """The judging a run still needs, in the order it is carried out."""

    known: list[StoredJudgeResult] = field(default_factory=list)
    """Rows known without a call: prefix derivations of stored k_max results, and copies of
    stored results with the same judge key."""
    prefix: list[tuple[Judge, list[JudgeTask]]] = field(default_factory=list)
    """Per prefix judge, its calls at k_max (rows: ``prefix_rows``)."""
    per_k: list[tuple[int, Judge, list[JudgeTask]]] = field(default_factory=list)
    """(k, judge, calls first needed at that k), in k order then judge order."""

    @property
    def calls(self) -> int:
        """The judge calls the plan makes."""
        return sum(len(t) for _, t in self.prefix) + sum(len(t) for _, _, t in self.per_k)


def plan_judging(
    judges: Sequence[Judge],
    cases: Sequence[TestCase],
    ks: Sequence[int],
    answers: AnswerMap,
    stored: Iterable[StoredJudgeResult],
    renewed: Iterable[tuple[str, int]] = (),
) -> JudgePlan:
    """The judge calls and copies that complete the run (module docstring)."""
    stale = set(renewed)
    done = {
        (r.case_id, r.k, r.judge): r.result
        for r in stored
        if r.result.status not in RETRYABLE and (r.case_id, r.k) not in stale
    }
    by_id = {c.id: c for c in cases}
    prefix = [j for j in judges if is_prefix(j)]
    others = [j for j in judges if not is_prefix(j)]
    plan = JudgePlan()
    k_max = ks[-1]

    for judge in prefix:
        tasks = []
        for case in cases:
            if all((case.id, k, judge.name) in done for k in ks):
                continue
            full = done.get((case.id, k_max, judge.name))
            ans = answers.get((case.id, k_max))
            if full is not None:
                plan.known += prefix_rows(judge, case.id, full, ks)
            elif ans is not None:
                tasks.append(JudgeTask(judge, case.id, k_max, judge_input(case, ans, k_max)))
        if tasks:
            plan.prefix.append((judge, tasks))

    # Known results by judge key, so that a resumed run reuses what it stored.
    by_name = {j.name: j for j in others}
    seen: dict[str, JudgeResult] = {}
    for (case_id, k, name), res in done.items():
        ans = answers.get((case_id, k))
        if name in by_name and ans is not None and case_id in by_id:
            seen.setdefault(judge_key(by_name[name], judge_input(by_id[case_id], ans, k)), res)

    planned: dict[str, JudgeTask] = {}
    for k in ks:
        for judge in others:
            tasks = []
            for case in cases:
                ans = answers.get((case.id, k))
                if ans is None or (case.id, k, judge.name) in done:
                    continue
                item = judge_input(case, ans, k)
                key = judge_key(judge, item)
                if key in seen:
                    plan.known.append(
                        StoredJudgeResult(
                            case.id, k, judge.name, copy_result(seen[key], case.id, k)
                        )
                    )
                elif key in planned:
                    planned[key].also.append((case.id, k))
                else:
                    planned[key] = JudgeTask(judge, case.id, k, item)
                    tasks.append(planned[key])
            if tasks:
                plan.per_k.append((k, judge, tasks))
    return plan
