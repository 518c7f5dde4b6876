"""Choice of k and the report files, on synthetic per-case scores with a known answer."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from ragjudge.schema import Answer, JudgeResult, JudgeStatus, TokenUsage
from ragjudge.store import RetrievalMetric, StoredJudgeResult, item_id
from ragjudge.store.rows import JudgeResults
from ragjudge.store.view import RunView
from ragjudge.sweep.analysis import analyse
from ragjudge.sweep.config import ObjectiveConfig, PenaltyConfig
from ragjudge.sweep.render import write_report

KS = [1, 2, 3, 4]
# Mean quality per k: k=3 is best, k=4 is a hair below it (noise), k=1 far below.
MEANS = {1: 0.3, 2: 0.6, 3: 0.8, 4: 0.79}


def res(judge: str, case: str, k: int, score: float | None, cost: float = 0.0) -> StoredJudgeResult:
    status = JudgeStatus.ok if score is not None else JudgeStatus.no_claims
    r = JudgeResult(
        judge=judge,
        judge_version="1",
        backend="offline",
        item_id=item_id(case, k),
        score=score,
        status=status,
        usage=TokenUsage(prompt_tokens=100 * k, calls=1, cost_usd=cost * k),
    )
    return StoredJudgeResult(case, k, judge, r)


def answer(case: str, k: int) -> Answer:
    return Answer(
        case_id=case,
        k=k,
        text="a",
        context_ids=[f"d{j}" for j in range(k)],
        contexts=["one two three four five"] * k,
        generator="extractive",
    )


def data(n: int = 40, cost: float = 0.0) -> RunView:
    """``n`` cases at each of KS; each judge result costs ``cost`` x k dollars."""
    rng = np.random.default_rng(1)
    rows, answers, retrieval = [], [], []
    for i in range(n):
        case = f"q{i}"
        noise = rng.normal(0, 0.1)
        for k in KS:
            s = float(np.clip(MEANS[k] + noise + rng.normal(0, 0.02), 0, 1))
            rows.append(res("faithfulness", case, k, s, cost))
            # completeness unscored for one case at k=2: that case drops from the paired sample
            rows.append(res("completeness", case, k, None if (i == 0 and k == 2) else s, cost))
            answers.append(answer(case, k))
            retrieval.append(RetrievalMetric(case, k, "recall", min(1.0, k / 3)))
    return RunView.from_rows("r", answers=answers, results=rows, retrieval=retrieval)


def test_best_k_and_within_noise():
    s = analyse(data(), ks=KS, judges=["faithfulness", "completeness"])
    c = s.choice
    assert c.best_k == 3
    assert 4 in c.within_noise and 3 in c.within_noise
    assert 1 not in c.within_noise and 2 not in c.within_noise
    tests = {t.k: t for t in c.tests}
    assert tests[1].diff == pytest.approx(-0.5, abs=0.02) and tests[1].ci_high < 0
    assert tests[4].ci_low <= 0 <= tests[4].ci_high
    # objective per case = mean of the two judges; case 0 misses completeness at k=2 only, so the
    # weighted mean uses faithfulness alone there and the case stays in the paired sample
    assert c.n_cases == 40
    comp2 = s.table("judge")["completeness"][2]
    assert (comp2.n_scored, comp2.n_total) == (39, 40)
    assert comp2.status_counts == {"ok": 39, "no_claims": 1}
    assert s.table("retrieval")["recall"][1].mean == pytest.approx(1 / 3)
    costs = {c.k: c for c in s.costs}
    assert costs[2].context_tokens_mean == 10 and costs[4].judge_tokens == 2 * 40 * 400


def test_weights_and_penalty_change_the_choice():
    d = data()
    only_recall = analyse(
        d, ks=KS, judges=["faithfulness"], objective=ObjectiveConfig(weights={"recall": 1})
    )
    assert only_recall.choice.best_k == 3  # recall saturates at k=3; ties go to the smaller k
    # 0.2 per 1000 context tokens... make it large: 5 tokens per context, weight 40 per 1000
    # tokens = 0.2 per context, which outweighs the quality gain past k=1
    penalised = analyse(
        d,
        ks=KS,
        judges=["faithfulness"],
        objective=ObjectiveConfig(penalty=PenaltyConfig(per="context_tokens", weight=80)),
    )
    assert penalised.choice.best_k == 1
    assert penalised.choice.penalty == "80 per 1000 context_tokens"


def test_no_choice_without_scores():
    d = data(3)
    empty = dataclasses.replace(d, results=JudgeResults.of({}))
    s = analyse(empty, ks=KS, judges=["faithfulness"])
    assert s.choice.best_k is None and "no case has the objective" in (s.choice.reason or "")
    assert s.table("judge")["faithfulness"][1].n_total == 3  # unjudged cases count as missing


def test_report_files(tmp_path):
    s = analyse(data(), ks=KS, judges=["faithfulness", "completeness"])
    files = write_report(s, tmp_path)
    for name in (
        "metrics",
        "costs",
        "choice",
        "summary_md",
        "summary_html",
        "plot_judges",
        "plot_retrieval",
        "plot_objective",
        "plot_tokens_cost",
    ):
        assert files[name].exists() and files[name].stat().st_size > 0, name
    assert files["plot_judges"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    choice = json.loads(files["choice"].read_text())
    assert choice["best_k"] == 3 and 4 in choice["within_noise"]
    md = files["summary_md"].read_text()
    assert "Best k = 3" in md and "![judges](judges_vs_k.png)" in md
    html = files["summary_html"].read_text()
    assert 'class="best"' in html and html.count('src="data:image/png;base64,') == 4
    lines = files["metrics"].read_text().splitlines()
    assert lines[0].startswith("metric,kind,k,mean,ci_low,ci_high")
    assert len(lines) == 1 + 4 * (2 + 1 + 1)  # (2 judges + recall + objective) x 4 k


def test_margin_makes_a_tiny_but_consistent_loss_practically_equivalent():
    """Many identical per-case values and a few consistently lower ones (like the demo's k=5 vs
    k=6): the loss is real (interval excludes 0), so with margin 0 only the best k is kept; a
    practical-equivalence margin larger than the loss keeps k=2 beside the best."""
    rows, answers = [], []
    for i in range(40):
        case = f"q{i}"
        for k in (1, 2):
            s = 0.7 + 0.01 * (i % 5) - (0.02 if k == 2 and i % 4 == 0 else 0.0)
            rows.append(res("faithfulness", case, k, s))
            answers.append(answer(case, k))
    d = RunView.from_rows("r", answers=answers, results=rows)
    strict = analyse(d, ks=[1, 2], judges=["faithfulness"]).choice
    assert strict.best_k == 1 and strict.within_noise == [1]
    t2 = next(t for t in strict.tests if t.k == 2)
    assert t2.ci_high < 0 and t2.diff == pytest.approx(-0.005)
    loose = analyse(
        d, ks=[1, 2], judges=["faithfulness"], objective=ObjectiveConfig(margin=0.01)
    ).choice
    assert loose.best_k == 1 and loose.within_noise == [1, 2]
    with pytest.raises(ValueError):
        ObjectiveConfig(margin=-0.1)
