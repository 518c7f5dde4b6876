"""The one presentation layer: a sweep summary as data rendered to Markdown, HTML and JSON
(issue #30, item 14), and the regression report's family counts and layout (item 15)."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from ragjudge.cli import app
from ragjudge.render import to_json
from ragjudge.schema import Aggregate
from ragjudge.sweep.analysis import KChoice, MetricAtK, NoiseTest, SweepSummary
from ragjudge.sweep.render import render_html, render_markdown, run_summary
from tests.test_store_export import stored_run  # noqa: F401  (fixture)


def _summary() -> SweepSummary:
    """A sweep whose best k is 6 and whose cheapest k within noise is 3."""
    ks = [1, 3, 6, 8]
    means = {1: 0.5, 3: 0.74, 6: 0.75, 8: 0.6}
    metrics = [
        MetricAtK(
            metric=name,
            kind=kind,
            k=k,
            aggregate=Aggregate(
                mean=means[k],
                ci_low=means[k] - 0.05,
                ci_high=means[k] + 0.05,
                n_scored=9,
                n_total=10,
            ),
        )
        for name, kind in (("faithfulness", "judge"), ("objective", "objective"))
        for k in ks
    ]
    tests = [
        NoiseTest(k=1, diff=-0.25, ci_low=-0.3, ci_high=-0.2),
        NoiseTest(k=3, diff=-0.012, ci_low=-0.031, ci_high=0.004),
        NoiseTest(k=6, diff=0.0, ci_low=0.0, ci_high=0.0),
        NoiseTest(k=8, diff=-0.15, ci_low=-0.2, ci_high=-0.1),
    ]
    choice = KChoice(
        best_k=6, within_noise=[3, 6], tests=tests, n_cases=9, weights={"faithfulness": 1}
    )
    return SweepSummary(
        run_id="r1",
        ks=ks,
        judges=["faithfulness"],
        retrieval_metrics=[],
        metrics=metrics,
        choice=choice,
        costs=[],
        n_cases=10,
    )


def test_choice_says_how_the_cheapest_k_within_noise_relates_to_the_chosen_k():
    text = run_summary(_summary()).choice
    assert "Best k = 6" in text and "the cheapest of these is k = 3" in text
    assert "-0.012 [-0.031, +0.004] from the best" in text
    assert "The chosen k is the best, k = 6; k = 3 is not distinguishable" in text


def test_html_summary_has_the_table_of_differences_the_markdown_has():
    s = _summary()
    md, html = render_markdown(s, {}), render_html(s, {})
    assert "## Difference from the best k" in md and "Difference from the best k" in html
    table = html[html.index('id="noise-tests"') :].split("</table>")[0]
    assert table.count("<tr") == 1 + 4 and "[-0.031, +0.004]" in table
    assert "[-0.031, +0.004]" in md


def test_summary_json_is_the_same_model():
    data = json.loads(to_json(run_summary(_summary())))
    assert data["best_k"] == 6 and data["within_noise"] == [3, 6]
    assert data["rows"][0]["name"] == "faithfulness" and len(data["rows"][0]["cells"]) == 4


def test_runs_show_names_no_metrics_csv_it_did_not_write(stored_run, tmp_path):  # noqa: F811
    runner = CliRunner()
    res = runner.invoke(app, ["runs", "show", "latest"])
    assert res.exit_code == 0, res.output
    assert "metrics.csv" not in res.output and "--out DIR" in res.output
    out = tmp_path / "rep"
    res = runner.invoke(app, ["runs", "show", "latest", "--out", str(out)])
    assert "metrics.csv" in res.output and (out / "metrics.csv").exists()


def _two_runs_with_an_identical_primary(ks=(5,)):
    """faithfulness drops in half the queries; completeness is identical in both runs."""
    from ragjudge.report.runscores import MetricSeries, RunScores

    rng = np.random.default_rng(3)
    base = rng.uniform(0.6, 1.0, 30)
    runs = []
    for run_id, drop in (("base", 0.0), ("cur", 0.5)):
        faith = {
            f"q{i}": float(max(v - (drop if i < 15 else 0.0), 0.0)) for i, v in enumerate(base)
        }
        same = {f"q{i}": 0.5 for i in range(30)}
        series = [
            MetricSeries(metric=m, k=k, kind="judge", values=v, version="1")
            for k in ks
            for m, v in (("faithfulness", faith), ("completeness", same))
        ]
        runs.append(RunScores(run_id=run_id, series=series))
    return runs


def test_primary_family_counts_match_the_rows_listed():
    from ragjudge.report.build import build_report

    base, cur = _two_runs_with_an_identical_primary()
    report = build_report(cur, base)
    primary = [m for m in report.metrics if m.role == "primary"]
    assert len(primary) == 3  # faithfulness, completeness, objective at k=5
    assert "3 comparisons (Holm over the 2 tested; 1 not tested" in report.primary
    faith = next(m for m in primary if m.metric == "faithfulness")
    assert "Holm over the 2 tested primary" in faith.reason


def test_markdown_report_groups_every_k_of_a_metric_in_one_row():
    from ragjudge.report.build import build_report, render_markdown

    base, cur = _two_runs_with_an_identical_primary(ks=(1, 2, 3, 4, 5, 6))
    md = render_markdown(build_report(cur, base))
    details = md[md.index("<details>") : md.index("</details>")]
    rows = [line for line in details.splitlines() if line.startswith("| ") and "---" not in line]
    assert [r.split("|")[1].strip() for r in rows[1:]] == [
        "faithfulness",
        "objective",
        "completeness",
    ]
    assert rows[0].count("k=") == 6
    assert len(md.splitlines()) < 80


def test_a_claim_no_longer_supported_is_quoted_from_the_current_answer():
    """The answer changed: its old sentence B left, a new sentence C is unsupported. The mover
    quotes C (before: it quoted B, a sentence of the baseline's answer)."""
    from ragjudge.report.build import build_report
    from ragjudge.report.runscores import MetricSeries, RunScores
    from ragjudge.schema import ClaimVerdict, Evidence, JudgeResult, JudgeStatus

    def result(case, score, claims):
        return JudgeResult(
            judge="faithfulness",
            judge_version="1",
            backend="offline",
            item_id=f"{case}@k3",
            score=score,
            status=JudgeStatus.ok,
            evidence=Evidence(claims=[ClaimVerdict(claim=c, verdict=v) for c, v in claims]),
        )

    runs = []
    for run_id, claims, score in (
        ("base", [("A is so.", "supported"), ("B is so.", "supported")], 1.0),
        ("cur", [("A is so.", "supported"), ("C is so.", "unsupported")], 0.5),
    ):
        values = {f"q{i}": (score if i < 15 else 1.0) for i in range(30)}
        run = RunScores(
            run_id=run_id,
            series=[MetricSeries(metric="faithfulness", k=3, kind="judge", values=values)],
        )
        for i in range(30):
            run.results[("faithfulness", 3, f"q{i}")] = result(
                f"q{i}", values[f"q{i}"], claims if i < 15 else [("A is so.", "supported")]
            )
        runs.append(run)
    report = build_report(runs[1], runs[0])
    move = report.moved[0].moves[0]
    assert move.claims_lost == ["C is so."]
