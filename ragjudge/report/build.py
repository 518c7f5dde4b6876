"""Build a regression report and write it as Markdown, self-contained HTML and JSON.

The JSON is the stable, machine-readable form (``schema_version`` bumps on any breaking change);
the Markdown fits a pull-request comment; the HTML embeds its plots (base64 PNG). Both are
rendered by the one presentation layer (``ragjudge.render``), which escapes user text
(questions, claims, ids) once; the ``ui`` compare page shows the same ``Report``. Both list
the comparisons regressed first, then inconclusive, then the rest, each group by effect size
(``ordered``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ragjudge import __version__
from ragjudge.errors import ConfigError
from ragjudge.render import check_out_dir, data_uri, render, to_json
from ragjudge.report.compare import Comparison, MetricComparison, compare_runs, primary_keys
from ragjudge.report.compare import headline_k as headline_k_of
from ragjudge.report.history import HistoryPoint, history_points
from ragjudge.report.movers import Move, MovedQuery, moved_queries
from ragjudge.report.plots import plot_effects, plot_history
from ragjudge.report.runscores import RunScores, add_objective, objective_weights
from ragjudge.report.thresholds import Thresholds

FORMATS = ("md", "html", "json")
SCHEMA_VERSION = 2


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
    primary: str
    """Which comparisons form the primary family, in words."""
    fail_on: Literal["primary", "any"]
    metrics: list[MetricComparison]
    moved: list[MovedQuery]
    history: list[HistoryPoint]
    headline: list[str]
    notes: list[str]
    warnings: list[str] = Field(default_factory=list)
    """Shown at the top (e.g. an unfinished run was compared)."""


def _summary(run: RunScores) -> RunSummary:
    m = run.manifest
    if m is None:
        return RunSummary(run_id=run.run_id)
    return RunSummary(
        run_id=run.run_id, dataset=m.dataset_name, started_at=m.started_at, tags=m.tags
    )


def headline_keys(run: RunScores, head_k: int | None) -> list[tuple[str, int]]:
    """Judge metrics and the objective at the headline k (``compare.headline_k``)."""
    k = headline_k_of(run, head_k)
    return sorted(
        ((s.metric, s.k) for s in run.series if s.kind in ("judge", "objective") and s.k == k),
        key=RunScores.sort_key,
    )


def _primary_text(
    metrics: list[str], ks: list[int], pooled: bool, compared: Sequence[MetricComparison]
) -> str:
    """Which comparisons are primary and how many of them Holm's correction covers: a
    comparison with nothing to test (identical, too few queries) enters no family."""
    at = f"k = {', '.join(map(str, ks))}" if ks else "no k"
    how = f"each pooled over {at}" if pooled else f"at {at}"
    rows = [m for m in compared if m.role == "primary"]
    tested = sum(m.correction is not None for m in rows)
    family = f"Holm over the {tested} tested"
    if tested < len(rows):
        family += f"; {len(rows) - tested} not tested (identical or too few queries)"
    return (
        f"{', '.join(metrics) or 'none'} {how}: {len(rows)} comparisons ({family}); "
        "everything else secondary (BH)"
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
    warnings: Iterable[str] = (),
    seed: int = 0,
) -> Report:
    """Compare ``current`` with ``baseline`` (``compare.compare_runs``) after adding the
    objective to both and checking the thresholds against them. The objective combines, in
    both runs, only the metrics both have (the current run's weights over them): an objective
    over four judges against one over three measured the judge set, not the system."""
    thresholds = thresholds or Thresholds()
    both = current.metric_names() & baseline.metric_names()
    weights = {m: w for m, w in objective_weights(current).items() if m in both}
    notes = list(notes)
    left = sorted(set(objective_weights(current)) - set(weights))
    if left and "objective" not in current.metric_names() | baseline.metric_names():
        notes.append(
            f"objective: over the judges both runs have; {', '.join(left)} left out (in one "
            "run only)"
        )
    for run in (current, baseline, *history):
        if "objective" not in run.metric_names():
            add_objective(run, weights)
    shared_ks = {s.k for s in current.series} & {s.k for s in baseline.series}
    thresholds.check_against(
        current.metric_names() | baseline.metric_names(),
        shared_ks,
        current.metric_names() & baseline.metric_names(),
    )
    if headline_k is not None and headline_k not in shared_ks:
        have = ", ".join(map(str, sorted(shared_ks)))
        raise ConfigError(f"--headline-k {headline_k}: the runs have k = {have}")
    head = headline_k_of(current, headline_k, baseline)  # a k both runs have
    comparison = compare_runs(current, baseline, thresholds, head_k=head, seed=seed)
    keys = headline_keys(current, head)
    runs = list(history) or [baseline, current]
    p_metrics, p_ks = primary_keys(current, thresholds, head)
    return Report(
        generated_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        run=_summary(current),
        baseline=_summary(baseline),
        verdict="regressed" if comparison.regressed else "ok",
        counts=comparison.counts(),
        primary=_primary_text(p_metrics, p_ks, thresholds.primary.pool_ks, comparison.metrics),
        fail_on=thresholds.fail_on,
        metrics=comparison.metrics,
        moved=moved_queries(current, baseline, comparison, n=n_movers),
        history=history_points(runs, keys),
        headline=[f"{m} @ k={k}" for m, k in keys],
        notes=[*notes, *comparison.notes],
        warnings=list(warnings),
    )


def ordered(metrics: Sequence[MetricComparison]) -> list[MetricComparison]:
    """Regressed (or coverage drop) first, then inconclusive, then the rest; each group by the
    size of its effect |diff|, largest first."""

    def group(m: MetricComparison) -> int:
        return 0 if m.flagged else 1 if m.verdict == "inconclusive" else 2

    return sorted(metrics, key=lambda m: (group(m), -abs(m.diff or 0.0), m.role != "primary"))


VERDICT_MARK = {
    "regressed": "▼",
    "improved": "▲",
    "unchanged": "=",
    "inconclusive": "?",
    "identical": "≡",
}


class MetricAcrossK(BaseModel):
    """One metric's comparisons side by side: ``cells[i]`` is its comparison at ``ks[i]``."""

    metric: str
    cells: list[MetricComparison | None]


def by_metric(metrics: Sequence[MetricComparison]) -> tuple[list[int], list[MetricAcrossK]]:
    """The per-k comparisons grouped into one row per metric, in ``ordered`` order of each
    metric's most notable comparison; pooled comparisons (k = None) are left out."""
    ks = sorted({m.k for m in metrics if m.k is not None})
    rows: dict[str, dict[int, MetricComparison]] = {}
    for m in ordered(metrics):
        if m.k is not None:
            rows.setdefault(m.metric, {})[m.k] = m
    return ks, [
        MetricAcrossK(metric=metric, cells=[cells.get(k) for k in ks])
        for metric, cells in rows.items()
    ]


class MetricMoves(BaseModel):
    """One query's moves on one metric, runs of k with the same change merged."""

    metric: str
    spans: list[tuple[str, Move]]
    """(``"2"`` or ``"4–10"``, the first move of that run of k)."""
    claims_lost: list[str]
    left_top_k: list[str]


def moves_by_metric(query: MovedQuery) -> list[MetricMoves]:
    """``query.moves`` grouped by metric (largest drop first); consecutive k with the same
    baseline and current value become one span; evidence is the union over the metric's k."""
    groups: dict[str, list[Move]] = {}
    for mv in query.moves:
        groups.setdefault(mv.metric, []).append(mv)
    out = []
    for metric, moves in groups.items():
        moves.sort(key=lambda x: x.k)
        spans: list[list[Move]] = []
        for mv in moves:
            last = spans[-1][-1] if spans else None
            same = last is not None and (last.baseline, last.current) == (mv.baseline, mv.current)
            if same and last is not None and mv.k == last.k + 1:
                spans[-1].append(mv)
            else:
                spans.append([mv])
        out.append(
            MetricMoves(
                metric=metric,
                spans=[
                    (f"{s[0].k}" if len(s) == 1 else f"{s[0].k}–{s[-1].k}", s[0]) for s in spans
                ],
                claims_lost=sorted({c for mv in moves for c in mv.claims_lost}),
                left_top_k=sorted({d for mv in moves for d in mv.left_top_k}),
            )
        )
    return sorted(out, key=lambda g: min(mv.delta for _, mv in g.spans))


def report_plots(report: Report) -> dict[str, bytes]:
    comparison = Comparison(
        run_id=report.run.run_id, baseline_id=report.baseline.run_id, metrics=report.metrics
    )
    plots = {"effects.png": plot_effects(comparison)}
    if report.history:
        plots["history.png"] = plot_history(report.history)
    return plots


def render_json(report: Report) -> str:
    return to_json(report)


def render_markdown(report: Report, plot_files: Sequence[str] = ()) -> str:
    return render(
        "report.md.j2",
        r=report,
        plots=plot_files,
        ordered=ordered,
        by_metric=by_metric,
        moves_by_metric=moves_by_metric,
        mark=VERDICT_MARK,
    )


def html_context(report: Report, plots: dict[str, bytes]) -> dict[str, Any]:
    """What ``_report_body.html.j2`` reads: the report file and the ``ui`` compare page."""
    embedded = {name: data_uri(data) for name, data in plots.items()}
    return {"r": report, "plots": embedded, "ordered": ordered}


def render_html(report: Report, plots: dict[str, bytes]) -> str:
    return render("report.html.j2", **html_context(report, plots))


def write_report(report: Report, out_dir: str | Path, formats: Sequence[str]) -> dict[str, Path]:
    """Write the requested formats (and the plot PNGs) into ``out_dir``; returns the paths."""
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ConfigError(f"unknown report format {', '.join(unknown)}; use {', '.join(FORMATS)}")
    out = check_out_dir(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{out}: cannot create the report folder ({exc.strerror})") from None
    written: dict[str, Path] = {}
    plots = report_plots(report) if {"md", "html"} & set(formats) else {}
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
