"""The sweep prepares the next judging step's items in a worker thread while it judges the
current step (``InProcessExecutor._prepare``), and every step's items once, before judging
them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from ragjudge.schema import JudgeInput, JudgeResult
from ragjudge.store import open_store
from ragjudge.sweep.components import Components
from ragjudge.sweep.run import SweepOutcome, run_sweep
from tests.test_sweep_run import (
    CountingJudge,
    FirstSentenceGenerator,
    OverlapRetriever,
    config,
    make_testset,
)


def _k(item_id: str) -> int:
    return int(item_id.rsplit("@k", 1)[1])


class PreparingJudge(CountingJudge):
    """A ``BatchedJudge``: records which k each ``prepare`` was for and on which thread; the
    judging of k = 1 waits until the preparation of k = 2 has started (up to 5 s)."""

    backend = "custom"
    needs_answer = True

    def __init__(self) -> None:
        super().__init__("faithfulness", needs_contexts=True)
        self.prepared: list[tuple[int, str]] = []
        self.judged_unprepared: list[str] = []
        self.waited_in_vain = 0
        self.second_started = threading.Event()

    def prepare(self, items: Sequence[JudgeInput]) -> None:
        ks = {_k(i.id) for i in items}
        assert len(ks) == 1, ks  # one step at a time
        k = ks.pop()
        self.prepared.append((k, threading.current_thread().name))
        if k == 2:
            self.second_started.set()

    async def judge(self, item: JudgeInput) -> JudgeResult:
        if _k(item.id) not in {k for k, _ in self.prepared}:
            self.judged_unprepared.append(item.id)
        if _k(item.id) == 1 and not await asyncio.to_thread(self.second_started.wait, 5):
            self.waited_in_vain += 1
        return await super().judge(item)


def _sweep(tmp_path, judge: CountingJudge) -> SweepOutcome:
    """The small sweep of tests/test_sweep_run.py at k = 1..3 with ``judge`` as faithfulness."""
    comp = Components(
        retriever=OverlapRetriever(),
        generator=FirstSentenceGenerator(),
        judges=[judge],
        models={"generator": "first-sentence@1"},
    )
    return run_sweep(
        config(ks=[1, 2, 3], judges={"names": ["faithfulness"]}),
        store=open_store(tmp_path / "runs.sqlite"),
        components=comp,
        testset=make_testset(),
    )


def test_the_next_step_is_prepared_in_a_thread_while_the_current_one_is_judged(tmp_path):
    judge = PreparingJudge()
    out = _sweep(tmp_path, judge)
    assert out.status == "finished"
    assert out.counts["judge_results"] == 7 * 3
    assert judge.judged_unprepared == []
    assert judge.waited_in_vain == 0  # k = 2 was being prepared while k = 1 was judged
    assert sorted(k for k, _ in judge.prepared) == [1, 2, 3]  # each step prepared once
    assert all(name != threading.main_thread().name for _, name in judge.prepared)


class ItemPreparingJudge(CountingJudge):
    """A ``BatchedJudge`` that notes every item prepared and every item judged unprepared."""

    backend = "custom"
    needs_answer = True

    def __init__(self) -> None:
        super().__init__("faithfulness", needs_contexts=True)
        self.prepared: list[str] = []
        self.judged_unprepared: list[str] = []

    def prepare(self, items: Sequence[JudgeInput]) -> None:
        self.prepared += [i.id for i in items]

    async def judge(self, item: JudgeInput) -> JudgeResult:
        if item.id not in self.prepared:
            self.judged_unprepared.append(item.id)
        return await super().judge(item)


def test_steps_of_several_slices_are_prepared_slice_by_slice(tmp_path, monkeypatch):
    import ragjudge.judges.runner as runner

    monkeypatch.setattr(runner, "PREPARE_SLICE", 3)  # seven cases: three slices a step
    judge = ItemPreparingJudge()
    out = _sweep(tmp_path, judge)
    assert out.status == "finished"
    assert judge.judged_unprepared == []
    assert sorted(judge.prepared) == sorted(set(judge.prepared))  # each item once
    assert len(judge.prepared) == 7 * 3
