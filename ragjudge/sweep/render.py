"""Writing a sweep's results to a folder: tables (CSV, JSON), plots (PNG) and a short summary
in Markdown and HTML. The summary is one presentation model (``RunSummary``) rendered by the
one presentation layer (``ragjudge.render``: ``sweep.md.j2``, ``sweep.html.j2``, the ``ui``
run page). The HTML is one self-contained file: its plots are embedded as base64 PNG data URIs,
like the regression report's. Every number is printed as ``mean [ci_low, ci_high] (n scored/n
total)``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from pydantic import BaseModel, Field

from ragjudge.render import data_uri, fmt_aggregate, render
from ragjudge.schema import Aggregate, RunManifest
from ragjudge.sweep.analysis import CostAtK, NoiseTest, SweepSummary
from ragjudge.sweep.plots import write_plots

fmt = fmt_aggregate


def choice_sentence(summary: SweepSummary) -> str:
    """The best k, the set within noise and, when a smaller k is within noise, how the cheapest
    of them relates to the best (its paired difference and what choosing it means)."""
    c = summary.choice
    if c.best_k is None:
        return f"No k could be chosen: {c.reason}."
    obj = summary.table("objective").get("objective", {}).get(c.best_k)
    noise = ", ".join(map(str, c.within_noise))
    text = (
        f"Best k = {c.best_k} (objective {fmt(obj)} over {c.n_cases} cases scored at every k). "
        f"Within noise of the best (paired bootstrap, 95%): k in {{{noise}}}"
    )
    smallest = c.smallest_within_noise
    if smallest is not None and smallest < c.best_k:
        test = next((t for t in c.tests if t.k == smallest), None)
        text += f"; the cheapest of these is k = {smallest}"
        if test is not None:
            text += f", {test.diff:+.3f} [{test.ci_low:+.3f}, {test.ci_high:+.3f}] from the best"
        text += (
            f". The chosen k is the best, k = {c.best_k}; k = {smallest} is not distinguishable "
            f"from it at 95% and uses fewer documents, so choose k = {smallest} when cost matters"
        )
    return text + "."


def objective_text(summary: SweepSummary) -> str:
    c = summary.choice
    parts = " + ".join(f"{w:g}·{m}" for m, w in sorted(c.weights.items()))
    total = sum(c.weights.values())
    text = f"objective = ({parts}) / {total:g} over the metrics scored for a case"
    if c.penalty:
        text += f", minus {c.penalty}"
    return text


class MetricRow(BaseModel):
    """One metric across k: ``cells[i]`` is the aggregate at ``RunSummary.ks[i]``."""

    name: str
    kind: str
    cells: list[Aggregate | None]


class RunSummary(BaseModel):
    """A sweep's summary as data: what the Markdown, the HTML file, the JSON and the ``ui``
    run page show."""

    run_id: str
    manifest: RunManifest | None = None
    n_cases: int
    ks: list[int]
    best_k: int | None
    within_noise: list[int]
    not_retrieved: list[int] = Field(default_factory=list)
    choice: str
    """``choice_sentence``."""
    objective: str
    """``objective_text``."""
    rows: list[MetricRow]
    """Every judge, then every retrieval metric, then the objective."""
    tests: list[NoiseTest]
    """The paired difference of each k from the best."""
    costs: list[CostAtK]

    def k_class(self, k: int) -> str:
        """``best``, ``noise`` (within noise of the best) or ``""``: the cell's CSS class."""
        return "best" if k == self.best_k else "noise" if k in self.within_noise else ""


def run_summary(summary: SweepSummary) -> RunSummary:
    """The presentation model of a sweep's summary."""
    tables = summary.table()
    kinds = {m.metric: m.kind for m in summary.metrics}
    names = [*summary.judges, *summary.retrieval_metrics, "objective"]
    return RunSummary(
        run_id=summary.run_id,
        manifest=summary.manifest,
        n_cases=summary.n_cases,
        ks=summary.ks,
        best_k=summary.choice.best_k,
        within_noise=summary.choice.within_noise,
        not_retrieved=summary.choice.not_retrieved,
        choice=choice_sentence(summary),
        objective=objective_text(summary),
        rows=[
            MetricRow(
                name=n,
                kind=kinds.get(n, "objective"),
                cells=[tables.get(n, {}).get(k) for k in summary.ks],
            )
            for n in names
        ],
        tests=summary.choice.tests,
        costs=summary.costs,
    )


def render_markdown(summary: SweepSummary, plots: dict[str, Path]) -> str:
    return render(
        "sweep.md.j2", s=run_summary(summary), plots=[(n, p.name) for n, p in plots.items()]
    )


def render_html(summary: SweepSummary, plots: dict[str, Path]) -> str:
    return render(
        "sweep.html.j2",
        s=run_summary(summary),
        plots=[(n, data_uri(p.read_bytes())) for n, p in plots.items()],
    )


def write_tables(summary: SweepSummary, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    metrics_path = out_dir / "metrics.csv"
    with metrics_path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(
            ["metric", "kind", "k", "mean", "ci_low", "ci_high", "n_scored", "n_total", "coverage"]
        )
        for m in summary.metrics:
            a = m.aggregate
            row = [m.metric, m.kind, m.k, a.mean, a.ci_low, a.ci_high, a.n_scored, a.n_total]
            w.writerow([*row, round(a.coverage, 6)])
    costs_path = out_dir / "costs.csv"
    with costs_path.open("w", newline="", encoding="utf-8") as fh:
        fields = list(type(summary.costs[0]).model_fields) if summary.costs else ["k"]
        dw = csv.DictWriter(fh, fieldnames=fields)
        dw.writeheader()
        for c in summary.costs:
            dw.writerow(c.model_dump())
    choice_path = out_dir / "choice.json"
    payload = summary.choice.model_dump(mode="json") | {
        "smallest_within_noise": summary.choice.smallest_within_noise,
        "sentence": choice_sentence(summary),
        "objective": objective_text(summary),
        "run_id": summary.run_id,
    }
    choice_path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return {"metrics": metrics_path, "costs": costs_path, "choice": choice_path}


def write_report(summary: SweepSummary, out_dir: Path) -> dict[str, Path]:
    """Tables, plots, ``summary.md`` and ``summary.html`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = write_tables(summary, out_dir)
    plots = write_plots(summary, out_dir)
    files.update({f"plot_{k}": v for k, v in plots.items()})
    md = out_dir / "summary.md"
    md.write_text(render_markdown(summary, plots), encoding="utf-8")
    html = out_dir / "summary.html"
    html.write_text(render_html(summary, plots), encoding="utf-8")
    files["summary_md"] = md
    files["summary_html"] = html
    return files
