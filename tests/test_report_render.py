import json

import numpy as np

from ragjudge.report.build import build_report, render_json, render_markdown, write_report
from ragjudge.report.runscores import MetricSeries, RunScores
from ragjudge.schema import ClaimVerdict, Evidence, JudgeResult, JudgeStatus

EVIL = '<script>alert("x")</script> | pipe'


def _result(case, score, supported):
    claims = [
        ClaimVerdict(
            claim="The tower is 40 m tall.", verdict="supported" if supported else "unsupported"
        ),
        ClaimVerdict(claim=EVIL, verdict="supported"),
    ]
    return JudgeResult(
        judge="faithfulness",
        judge_version="1",
        backend="offline",
        item_id=f"{case}@k5",
        score=score,
        status=JudgeStatus.ok,
        evidence=Evidence(claims=claims),
    )


def _runs():
    rng = np.random.default_rng(3)
    base = rng.uniform(0.6, 1.0, 30)
    cur = base.copy()
    cur[:15] -= 0.5
    runs = []
    for run_id, vals in (("base", base), ("cur", cur)):
        values = {f"q{i}": float(max(v, 0.0)) for i, v in enumerate(vals)}
        r = RunScores(
            run_id=run_id,
            series=[
                MetricSeries(metric="faithfulness", k=5, kind="judge", values=values, version="1")
            ],
            questions={f"q{i}": f"Question {i} {EVIL}" for i in range(30)},
            relevant={"q0": {"d1": 2}},
        )
        for i in range(30):
            r.results[("faithfulness", 5, f"q{i}")] = _result(
                f"q{i}", values[f"q{i}"], supported=(run_id == "base" or i >= 15)
            )
        r.contexts[("q0", 5)] = ["d1", "d2"] if run_id == "base" else ["d3", "d2"]
        runs.append(r)
    return runs


def test_report_flags_drop_and_carries_evidence(tmp_path):
    base, cur = _runs()
    report = build_report(cur, base)
    assert report.verdict == "regressed"
    worst = report.moved[0].moves[0]
    assert worst.delta < 0 and worst.claims_lost == ["The tower is 40 m tall."]
    q0 = next(q for q in report.moved if q.case_id == "q0")
    assert q0.moves[0].left_top_k == ["d1"]
    paths = write_report(report, tmp_path, ["md", "html", "json"])
    html = paths["html"].read_text()
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert html.count('src="data:image/png;base64,') == 2
    md = paths["md"].read_text()
    # escaped exactly once: not raw, not double-escaped
    assert "<script>" not in md and "&lt;script&gt;" in md and "&amp;lt;" not in md
    assert "\\| pipe" in md
    assert "REGRESSED" in md and (tmp_path / "effects.png").stat().st_size > 1000
    data = json.loads(paths["json"].read_text())
    assert data["verdict"] == "regressed" and data["schema_version"] == 2
    assert render_json(report) == paths["json"].read_text()


def test_no_regression_renders_clean_verdict():
    base, _ = _runs()
    report = build_report(base, base)
    assert report.verdict == "ok"
    assert "no regression" in render_markdown(report)


def _external_refs(html: str) -> list[str]:
    """Every src/href that is not a data: URI or an in-page anchor, and every CSS url()."""
    from html.parser import HTMLParser

    refs: list[str] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            for name, value in attrs:
                if name in ("src", "href") and value and not value.startswith(("data:", "#")):
                    refs.append(f"{tag} {name}={value}")

    Collect().feed(html)
    return refs + [u for u in html.split("url(")[1:]]


def test_sweep_summary_html_is_one_self_contained_file(tmp_path):
    from ragjudge.sweep.analysis import analyse
    from ragjudge.sweep.render import write_report as write_sweep
    from tests.test_sweep_analysis import KS, data

    files = write_sweep(analyse(data(), ks=KS, judges=["faithfulness"]), tmp_path)
    html = files["summary_html"].read_text()
    plots = [p for name, p in files.items() if name.startswith("plot_")]
    assert html.count('<img class="plot" src="data:image/png;base64,') == len(plots) == 4
    assert _external_refs(html) == []
    report_html = write_report(build_report(*reversed(_runs())), tmp_path / "r", ["html"])
    assert _external_refs(report_html["html"].read_text()) == []
