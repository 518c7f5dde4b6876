"""Batched preparation (``BatchedJudge.prepare``, ``runner.prepared_slices``): the offline
judges encode every text of many items in one call and then return exactly what they return
without it; every runner prepares each slice of items before judging it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragjudge.judges.offline.embed import EmbeddingCache
from ragjudge.judges.offline.params import DEFAULT_PARAMS, MODEL_PARAMS, load_params
from ragjudge.judges.registry import available, create_judge
from ragjudge.judges.runner import PREPARE_SLICE, prepared_slices, run_judges
from ragjudge.protocols import BatchedJudge
from ragjudge.schema import JudgeInput, JudgeResult, JudgeStatus


class CallCountingEncoder:
    """Deterministic unit vectors from the text's bytes (so batching cannot move a vector);
    records each call's texts."""

    name = "call-counting-encoder"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        out = []
        for t in texts:
            v = np.random.default_rng(list(t.encode())).standard_normal(16).astype(np.float32)
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


ITEMS = [
    JudgeInput(
        id="lighthouse",
        question="When was the Bell Rock Lighthouse first lit, and who built it?",
        answer="It was first lit in 1811. Robert Stevenson built it on a reef.",
        reference="The Bell Rock Lighthouse was first lit in 1811; Robert Stevenson built it.",
        contexts=[
            "The Bell Rock Lighthouse, off the coast of Angus, was first lit on 1 February 1811. "
            "It was built by Robert Stevenson between 1807 and 1810.",
            "Lighthouses warn ships of reefs. Many were automated in the 1980s.",
        ],
    ),
    JudgeInput(
        id="bees",
        question="How do honey bees tell each other where food is?",
        answer="They perform a waggle dance whose angle gives the direction of the food.",
        reference="With the waggle dance: its angle and length encode direction and distance.",
        contexts=["Foragers perform a waggle dance; the angle of the run points to the food."],
    ),
    JudgeInput(
        id="abstains",
        question="What is the boiling point of the compound?",
        answer="I don't know.",
        reference="It boils at 78 degrees Celsius.",
        contexts=["The compound is a clear liquid used as a solvent."],
    ),
    JudgeInput(
        id="no-reference",
        question="Which river runs through Vienna?",
        answer="The Danube runs through Vienna, past the old town's north-east edge.",
        contexts=["Vienna lies on the Danube.", "The city has about two million people."],
    ),
    JudgeInput(id="empty-answer", question="Why is the sky blue?", answer="", contexts=["Light."]),
]


def five(params_path: Path, cache: EmbeddingCache) -> list:
    """Every registered offline judge (five), on ``params_path``, sharing ``cache``."""
    params = load_params(params_path)
    names = [n for n, backends in available().items() if "offline" in backends]
    return [create_judge(n, "offline", params=params, cache=cache) for n in names]


def comparable(r: JudgeResult) -> tuple:
    return (r.item_id, r.judge, r.status, r.score, r.evidence)


@pytest.mark.parametrize("params", [DEFAULT_PARAMS, MODEL_PARAMS], ids=["v2", "v3"])
async def test_prepare_encodes_once_and_changes_no_result(params: Path) -> None:
    plain_enc, prepared_enc = CallCountingEncoder(), CallCountingEncoder()
    plain = five(params, EmbeddingCache(plain_enc))
    prepared = five(params, EmbeddingCache(prepared_enc))
    assert len(prepared) == 5 and all(isinstance(j, BatchedJudge) for j in prepared)

    expected = [comparable(await j.judge(i)) for j in plain for i in ITEMS]
    for j in prepared:
        j.prepare(ITEMS)
    calls_after_prepare = len(prepared_enc.calls)
    got = [comparable(await j.judge(i)) for j in prepared for i in ITEMS]

    assert got == expected
    assert len(prepared_enc.calls) == calls_after_prepare, "judging encoded a text prepare missed"
    assert calls_after_prepare <= len(prepared)  # at most one batch per judge
    assert len(plain_enc.calls) > 2 * len(plain)  # without it, small batches item by item
    assert {t for c in prepared_enc.calls for t in c} == {t for c in plain_enc.calls for t in c}


async def test_run_judges_prepares_each_slice_before_judging_it() -> None:
    enc = CallCountingEncoder()
    judges = five(DEFAULT_PARAMS, EmbeddingCache(enc))
    expected = {
        j.name: [comparable(await j.judge(i)) for i in ITEMS]
        for j in five(DEFAULT_PARAMS, EmbeddingCache(CallCountingEncoder()))
    }
    out = await run_judges(judges, ITEMS, progress=False)
    assert {n: [comparable(r) for r in rs] for n, rs in out.items()} == expected
    assert 1 <= len(enc.calls) <= len(judges)


class Plain:
    """A judge that does not batch; records what it judged."""

    name = "recording"
    version = "1"
    backend = "custom"
    requires_reference = False
    needs_answer = True
    needs_contexts = False

    def __init__(self, log: list[tuple[str, str]]) -> None:
        self.log = log

    async def judge(self, item: JudgeInput) -> JudgeResult:
        self.log.append(("judge", item.id))
        return JudgeResult(
            judge=self.name,
            judge_version=self.version,
            backend=self.backend,
            item_id=item.id,
            score=1.0,
            status=JudgeStatus.ok,
        )


class Recording(Plain):
    """A judge that batches: records, in order, what it prepared and judged."""

    def __init__(self, log: list[tuple[str, str]], fail_prepare: bool = False) -> None:
        super().__init__(log)
        self.fail_prepare = fail_prepare

    def prepare(self, items: Sequence[JudgeInput]) -> None:
        if self.fail_prepare:
            raise RuntimeError("prepare failed")
        self.log += [("prepare", i.id) for i in items]


def test_slices_are_prepared_one_at_a_time_and_cover_every_item() -> None:
    items = [
        JudgeInput(id=f"q{n}", question="q", answer="a", contexts=[])
        for n in range(PREPARE_SLICE + 3)
    ]
    log: list[tuple[str, str]] = []
    judge = Recording(log)
    parts = []
    for part in prepared_slices([judge], items):
        parts.append(part)
        log += [("judge", items[i].id) for i in part]
    assert [len(p) for p in parts] == [PREPARE_SLICE, 3]
    assert [i for p in parts for i in p] == list(range(len(items)))
    first = [("prepare", f"q{n}") for n in range(PREPARE_SLICE)]
    assert log[:PREPARE_SLICE] == first  # the first slice is prepared before it is judged
    assert log[2 * PREPARE_SLICE] == ("prepare", f"q{PREPARE_SLICE}")  # then the second one


def test_a_judge_without_prepare_gets_one_slice() -> None:
    items = [
        JudgeInput(id=f"q{n}", question="q", answer="a", contexts=[])
        for n in range(PREPARE_SLICE + 3)
    ]
    assert not isinstance(Plain([]), BatchedJudge)
    assert [len(p) for p in prepared_slices([Plain([])], items)] == [len(items)]


async def test_a_failing_prepare_loses_no_result() -> None:
    log: list[tuple[str, str]] = []
    out = await run_judges([Recording(log, fail_prepare=True)], ITEMS, progress=False)
    assert [r.item_id for r in out["recording"]] == [i.id for i in ITEMS]
    plain = await run_judges([Plain([])], ITEMS, progress=False)
    assert [comparable(r) for r in out["recording"]] == [comparable(r) for r in plain["recording"]]
    assert ("prepare", ITEMS[0].id) not in log
