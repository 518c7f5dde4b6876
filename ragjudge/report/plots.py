"""Report plots as PNG bytes (matplotlib, Agg backend): effects with intervals, and history.

Bare ``Figure`` objects, no pyplot: the web app draws these in its worker threads, where
pyplot's global figure state is not safe."""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragjudge.report.compare import Comparison
from ragjudge.report.history import HistoryPoint

if TYPE_CHECKING:
    from matplotlib.figure import Figure

VERDICT_COLORS = {
    "regressed": "#c0392b",
    "improved": "#1e8449",
    "unchanged": "#1f77b4",
    "inconclusive": "#e67e22",
    "identical": "#7f8c8d",
}


def _axes(width: float, height: float) -> tuple[Figure, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, fig.add_subplot()


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def plot_effects(comparison: Comparison) -> bytes:
    """Forest plot: paired mean difference and 95% CI per metric and k, coloured by verdict."""
    rows = [m for m in comparison.metrics if m.diff is not None]
    fig, ax = _axes(7.5, max(2.0, 0.32 * len(rows) + 1.0))
    for i, m in enumerate(reversed(rows)):
        color = VERDICT_COLORS["regressed" if m.flagged else m.verdict]
        if m.ci_low is not None and m.ci_high is not None:
            ax.plot([m.ci_low, m.ci_high], [i, i], color=color, lw=2)
        ax.plot([float(m.diff or 0.0)], [i], "o", color=color)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_yticks(range(len(rows)), [m.label for m in reversed(rows)], fontsize=8)
    ax.set_xlabel("current - baseline (paired mean, 95% bootstrap CI)")
    ax.set_title(f"{comparison.run_id} vs {comparison.baseline_id}")
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def plot_history(points: Sequence[HistoryPoint]) -> bytes:
    """Each headline metric's mean (with its CI band) over the runs, oldest first."""
    series: dict[str, list[HistoryPoint]] = defaultdict(list)
    order: list[str] = []
    for p in points:
        if p.run_id not in order:
            order.append(p.run_id)
        if p.mean is not None:
            series[f"{p.metric} @ k={p.k}"].append(p)
    fig, ax = _axes(7.5, 3.6)
    for label, pts in series.items():
        xs = [order.index(p.run_id) for p in pts]
        means = [float(p.mean or 0.0) for p in pts]
        ax.plot(xs, means, marker="o", label=label)
        lo = [p.ci_low if p.ci_low is not None else m for p, m in zip(pts, means, strict=True)]
        hi = [p.ci_high if p.ci_high is not None else m for p, m in zip(pts, means, strict=True)]
        ax.fill_between(xs, lo, hi, alpha=0.15)
    ax.set_xticks(range(len(order)), order, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("mean (95% CI)")
    ax.set_title("History of headline metrics")
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=7, loc="best")
    return _png(fig)
