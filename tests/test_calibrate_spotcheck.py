"""Spot-check selection: disagreement items first, then every score stratum represented."""

from __future__ import annotations

import numpy as np

from ragjudge.calibrate.source import RunData
from ragjudge.calibrate.spotcheck import select_items, split_contexts
from ragjudge.schema import JudgeResult, JudgeStatus


def _r(item: str, judge: str, score: float) -> JudgeResult:
    return JudgeResult(
        judge=judge,
        judge_version="1",
        backend="offline",
        item_id=item,
        score=score,
        status=JudgeStatus.ok,
    )


def test_selection_covers_the_score_range_and_the_disagreements() -> None:
    rng = np.random.default_rng(0)
    results = []
    # 200 items, most with high scores (a skewed run): random sampling would miss the low end.
    for i in range(200):
        s = float(np.clip(rng.beta(8, 1), 0, 1))
        results += [_r(f"c{i}@k3", "faithfulness", s), _r(f"c{i}@k3", "answer_relevancy", s)]
    # Three items where the two judges disagree completely.
    for i in (5, 50, 150):
        results = [r for r in results if r.item_id != f"c{i}@k3"]
        results += [_r(f"c{i}@k3", "faithfulness", 0.0), _r(f"c{i}@k3", "answer_relevancy", 1.0)]
    picks = select_items(RunData(source="t", results=results), 20, seed=1)
    assert len(picks) == 20 and len({p.item_id for p in picks}) == 20
    dis = [p for p in picks if p.reason == "disagreement"]
    assert len(dis) == 5
    assert {"c5@k3", "c50@k3", "c150@k3"} <= {p.item_id for p in dis}
    strata = {p.reason for p in picks if p.reason != "disagreement"}
    assert len(strata) >= 4  # low, middle and high scores all represented
    low = min(p.mean_score for p in picks if p.reason != "disagreement")
    all_means = sorted(r.score for r in results if r.judge == "faithfulness")
    assert low <= float(np.quantile(all_means, 0.05))  # far down the tail


def test_selection_excludes_labelled_items_and_stops_at_run_size() -> None:
    results = [_r(f"c{i}@k1", "faithfulness", i / 9) for i in range(10)]
    run = RunData(source="t", results=results)
    picks = select_items(run, 50, exclude={"c0@k1", "c1@k1"})
    assert len(picks) == 8 and not {"c0@k1", "c1@k1"} & {p.item_id for p in picks}
    assert all(p.reason.startswith("stratum") for p in picks)  # one judge: no disagreement


def test_split_contexts_inverts_the_sheet_cell() -> None:
    cell = "[1] first\n\nstill first [2] inline\n\n[2] second\n\n[7] not a mark\n\n[3] third"
    assert split_contexts(cell) == [
        "first\n\nstill first [2] inline",
        "second\n\n[7] not a mark",
        "third",
    ]
    assert split_contexts("") == []


def test_each_question_is_asked_once_before_any_twice() -> None:
    """The items of one question at several k spread alike: the disagreement rule took
    q0@k1..q0@k4 for four of its five places, and the strata drew repeats while other questions
    were left."""
    results = []
    for q in range(12):
        for k in range(1, 6):
            gap = 1.0 if q == 0 else 0.5 if q == 1 else 0.1 * (q % 3)
            low = (q * 7 + k) % 10 / 20
            results += [
                _r(f"q{q}@k{k}", "faithfulness", low),
                _r(f"q{q}@k{k}", "relevancy", low + gap / 2),
            ]
    picks = select_items(RunData(source="t", results=results), 16, seed=3)
    questions = [p.item_id.rpartition("@k")[0] for p in picks]
    assert len(picks) == 16
    assert len(set(questions[:12])) == 12  # every question once in the first twelve picks
    assert sorted(set(questions)) == sorted(f"q{q}" for q in range(12))
    dis = [p.item_id for p in picks if p.reason == "disagreement"]
    assert dis[0].startswith("q0@") and dis[1].startswith("q1@")
    assert len({d.rpartition("@k")[0] for d in dis}) == len(dis)
