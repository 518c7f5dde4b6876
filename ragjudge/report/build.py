"""Build a regression report and write it as Markdown, self-contained HTML and JSON.

The JSON is the stable, machine-readable form (``schema_version`` bumps on any breaking change);
the Markdown fits a pull-request comment; the HTML embeds its plots (base64 PNG) and escapes all
user text (questions, claims, ids) through jinja2's autoescaping.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from jinja2 import Environment, PackageLoader, select_autoescape
from pydantic import BaseModel, Field

from ragjudge import __version__
from ragjudge.errors import ConfigError
from ragjudge.report.compare import MetricComparison, compare_runs
from ragjudge.report.history import HistoryPoint, history_points
from ragjudge.report.movers import Mover, top_movers
from ragjudge.report.plots import plot_effects, plot_history
from ragjudge.report.runscores import RunScores
from ragjudge.report.thresholds import Thresholds

FORMATS = ("md", "html", "json")
SCHEMA_VERSION = 1


class RunSummary(BaseModel):
    run_id: str
    dataset: str | None = None
    started_at: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)


class Report(BaseModel):
    schema_version: int = SCHEMA_VERSION
    ragjudge_version: str = __version__
    generated_at: str
    run: RunSummary
    baseline: RunSummary
    verdict: Literal["regressed", "ok"]
    counts: dict[str, int]
    metrics: list[MetricComparison]
    drops: list[Mover]
    gains: list[Mover]
    history: list[HistoryPoint]
    headline: list[str]
    notes: list[str]


def _summary(run: RunScores) -> RunSummary:
    m = run.manifest
    if m is None:
        return RunSummary(run_id=run.run_id)
    return RunSummary(
        run_id=run.run_id, dataset=m.dataset_name, started_at=m.started_at, tags=m.tags
    )


def headline_keys(run: RunScores, headline_k: int | None) -> list[tuple[str, int]]:
    """Judge metrics at the headline k (default: 5 if the run has it, else its largest k)."""
    judge_ks = sorted({s.k for s in run.series if s.kind == "judge"})
    if not judge_ks:
        return []
    k = headline_k if headline_k is not None else (5 if 5 in judge_ks else judge_ks[-1])
    return sorted(
        ((s.metric, s.k) for s in run.series if s.kind == "judge" and s.k == k),
        key=RunScores.sort_key,
    )


def build_report(
    current: RunScores,
    baseline: RunScores,
    *,
    thresholds: Thresholds | None = None,
    history: Sequence[RunScores] = (),
    headline_k: int | None = None,
    n_movers: int = 10,
    notes: Iterable[str] = (),
    seed: int = 0,
) -> Report:
    thresholds = thresholds or Thresholds()
    thresholds.check_known(current.metric_names() | baseline.metric_names())
    comparison = compare_runs(current, baseline, thresholds, seed=seed)
    drops, gains = top_movers(current, baseline, comparison, n=n_movers)
    keys = headline_keys(current, headline_k)
    runs = list(history) or [baseline, current]
    return Report(
        generated_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        run=_summary(current),
        baseline=_summary(baseline),
        verdict="regressed" if comparison.regressed else "ok",
        counts=comparison.counts(),
        metrics=comparison.metrics,
        drops=drops,
        gains=gains,
        history=history_points(runs, keys),
        headline=[f"{m} @ k={k}" for m, k in keys],
        notes=[*notes, *comparison.notes],
    )


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("ragjudge.report", "templates"),
        autoescape=select_autoescape(["html", "j2"], default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = lambda x, d=3: "–" if x is None else f"{x:.{d}f}"
    env.filters["pval"] = lambda x: "–" if x is None else f"{x:.2g}"
    env.filters["signed"] = lambda x: "–" if x is None else f"{x:+.3f}"
    env.filters["pct"] = lambda x: "–" if x is None else f"{x:.0%}"
    env.filters["md"] = _md_escape
    return env


def _md_escape(text: object) -> str:
    """Make user text safe inside a Markdown table cell (pipes, newlines, HTML)."""
    s = " ".join(str(text).split())
    for ch, rep in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        s = s.replace(ch, rep)
    return s


def _plots(report: Report) -> dict[str, bytes]:
    from ragjudge.report.compare import Comparison

    comparison = Comparison(
        run_id=report.run.run_id, baseline_id=report.baseline.run_id, metrics=report.metrics
    )
    plots = {"effects.png": plot_effects(comparison)}
    if report.history:
        plots["history.png"] = plot_history(report.history)
    return plots


def render_json(report: Report) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def render_markdown(report: Report, plot_files: Sequence[str] = ()) -> str:
    return _env().get_template("report.md.j2").render(r=report, plots=plot_files)


def render_html(report: Report, plots: dict[str, bytes]) -> str:
    embedded = {
        name: "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        for name, data in plots.items()
    }
    return _env().get_template("report.html.j2").render(r=report, plots=embedded)


def write_report(report: Report, out_dir: str | Path, formats: Sequence[str]) -> dict[str, Path]:
    """Write the requested formats (and the plot PNGs) into ``out_dir``; returns the paths."""
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ConfigError(f"unknown report format {', '.join(unknown)}; use {', '.join(FORMATS)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    plots = _plots(report) if {"md", "html"} & set(formats) else {}
    if "md" in formats:
        for name, data in plots.items():
            (out / name).write_bytes(data)
        written["md"] = out / "report.md"
        written["md"].write_text(render_markdown(report, list(plots)), encoding="utf-8")
    if "html" in formats:
        written["html"] = out / "report.html"
        written["html"].write_text(render_html(report, plots), encoding="utf-8")
    if "json" in formats:
        written["json"] = out / "report.json"
        written["json"].write_text(render_json(report), encoding="utf-8")
    return written
