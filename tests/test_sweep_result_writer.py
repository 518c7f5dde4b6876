"""The sweep's judge-result writer: paid results are stored the moment they return, free ones
in batches, and nothing is left waiting after ``flush``."""

from __future__ import annotations

from pathlib import Path

from ragjudge.schema import JudgeResult, JudgeStatus, TokenUsage
from ragjudge.store import StoredJudgeResult, open_store
from ragjudge.sweep.execute import FREE_ROWS, ResultWriter
from tests.test_store import manifest


def _result(case: str, usage: TokenUsage | None = None) -> JudgeResult:
    return JudgeResult(
        judge="faithfulness",
        judge_version="v",
        backend="llm" if usage else "offline",
        item_id=case,
        score=0.5,
        status=JudgeStatus.ok,
        usage=usage or TokenUsage(),
    )


def _rows(case: str, res: JudgeResult) -> list[StoredJudgeResult]:
    return [StoredJudgeResult(case_id=case, k=k, judge=res.judge, result=res) for k in (1, 2)]


def test_free_rows_wait_for_a_batch_and_a_paid_result_writes_everything(tmp_path: Path) -> None:
    store = open_store(tmp_path / "runs.sqlite")
    store.create_run(manifest("r"))
    writer = ResultWriter(store, "r")

    free = _result("c0")
    writer.add(_rows("c0", free), free)
    assert store.judge_results("r") == []  # a free result waits

    paid = _result("c1", TokenUsage(prompt_tokens=10, completion_tokens=2, calls=1))
    writer.add(_rows("c1", paid), paid)
    stored = {(r.case_id, r.k) for r in store.judge_results("r")}
    assert stored == {("c0", 1), ("c0", 2), ("c1", 1), ("c1", 2)}  # written at once, with c0
    assert writer.waiting == []

    for i in range(FREE_ROWS // 2):  # two rows each: the last one fills a batch
        res = _result(f"f{i}")
        writer.add(_rows(f"f{i}", res), res)
    assert len(store.judge_results("r")) == 4 + FREE_ROWS
    assert writer.waiting == []

    last = _result("z")
    writer.add(_rows("z", last), last)
    assert len(store.judge_results("r")) == 4 + FREE_ROWS
    writer.flush()
    assert len(store.judge_results("r")) == 6 + FREE_ROWS
