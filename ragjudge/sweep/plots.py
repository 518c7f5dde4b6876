"""PNG plots of a sweep (matplotlib, Agg backend): metrics against k with 95% interval bands,
the objective with the chosen k and the band of k within noise, and tokens and cost against k.

Bare ``Figure`` objects (no pyplot state: safe in threads, never a window) with margins fixed in
inches: a layout engine (``tight_layout``) measured every text once more before drawing, about
a third of the plots' time, for figures whose labels are known in advance.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragjudge.schema import Aggregate
from ragjudge.sweep.analysis import SweepSummary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DPI = 110


def _figure(
    width: float,
    height: float,
    *,
    left: float = 0.65,
    right: float = 0.2,
    top: float = 0.4,
    bottom: float = 0.5,
    hgap: float = 0.0,
    vgap: float = 0.0,
    rows: int = 1,
    cols: int = 1,
) -> tuple[Figure, Any]:
    """A ``width`` x ``height`` inch figure with a ``rows`` x ``cols`` grid of axes whose margins
    and gaps are given in inches (``hgap`` between columns, ``vgap`` between rows); returns the
    figure and its 2-d array of axes."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI)
    axes_w = (width - left - right - (cols - 1) * hgap) / cols
    axes_h = (height - top - bottom - (rows - 1) * vgap) / rows
    fig.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        top=1 - top / height,
        bottom=bottom / height,
        wspace=hgap / axes_w,
        hspace=vgap / axes_h,
    )
    return fig, fig.subplots(rows, cols, squeeze=False)


def _band(ax: Any, ks: list[int], series: dict[int, Aggregate], label: str) -> None:
    pts = [(k, a) for k, a in sorted(series.items()) if a.mean is not None]
    if not pts:
        return
    xs = [k for k, _ in pts]
    means = [a.mean for _, a in pts]
    lo = [a.ci_low if a.ci_low is not None else a.mean for _, a in pts]
    hi = [a.ci_high if a.ci_high is not None else a.mean for _, a in pts]
    (line,) = ax.plot(xs, means, marker="o", label=label)
    ax.fill_between(xs, lo, hi, alpha=0.2, color=line.get_color())
    ax.set_xticks(ks)


def _grid(table: dict[str, dict[int, Aggregate]], ks: list[int], title: str) -> Figure:
    names = list(table)
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    width = max(4.2 * cols, 6.8)  # the title's width when there is one panel
    fig, axes = _figure(width, 3.2 * rows, top=0.75, hgap=0.55, vgap=0.85, rows=rows, cols=cols)
    for ax, name in zip(axes.flat, names, strict=False):
        _band(ax, ks, table[name], name)
        ax.set_title(name)
        ax.set_xlabel("k")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.suptitle(title, y=1 - 0.12 / fig.get_figheight(), va="top")
    return fig


def _objective(summary: SweepSummary) -> Figure:
    objective = summary.table("objective").get("objective", {})
    fig, grid = _figure(6, 3.6, left=0.75)
    ax = grid[0, 0]
    _band(ax, summary.ks, objective, "objective")
    choice = summary.choice
    if choice.within_noise:
        for k in choice.within_noise:
            ax.axvspan(k - 0.4, k + 0.4, color="tab:green", alpha=0.12, lw=0)
    if choice.best_k is not None:
        ax.axvline(choice.best_k, color="tab:green", ls="--", label=f"best k = {choice.best_k}")
    ax.set_xlabel("k")
    ax.set_ylabel("objective")
    ax.set_title("Objective against k (shaded: k within noise of the best)")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:  # nothing to label when the objective is undefined
        ax.legend(loc="best")
    return fig


def _tokens_cost(summary: SweepSummary) -> Figure:
    fig, grid = _figure(10, 3.6, hgap=0.8, cols=2)
    ax1, ax2 = grid[0]
    cks = [c.k for c in summary.costs]
    ax1.plot(cks, [c.context_tokens_mean for c in summary.costs], marker="o", label="context")
    n = max(summary.n_cases, 1)
    ax1.plot(
        cks, [c.generation_tokens / n for c in summary.costs], marker="s", label="generation (LLM)"
    )
    ax1.plot(cks, [c.judge_tokens / n for c in summary.costs], marker="^", label="judges (LLM)")
    ax1.set_title("Tokens per case against k")
    ax1.set_ylim(bottom=0)
    ax1.set_xlabel("k")
    ax1.set_xticks(summary.ks)
    ax1.grid(alpha=0.3)
    ax1.legend(loc="best")
    costs = [c.cost_usd for c in summary.costs]
    ax2.bar(cks, costs, color="tab:orange")
    if not any(costs):
        ax2.text(0.5, 0.5, "no LLM cost (offline run)", ha="center", transform=ax2.transAxes)
        ax2.set_yticks([])
    ax2.set_ylim(bottom=0)
    ax2.set_title("Cost spent by the sweep at each k (USD)")
    ax2.set_xlabel("k")
    ax2.set_xticks(summary.ks)
    ax2.grid(alpha=0.3, axis="y")
    return fig


def sweep_figures(summary: SweepSummary) -> dict[str, Figure]:
    """The sweep's figures by name: ``judges`` and ``retrieval`` (when the run has them),
    ``objective`` and ``tokens_cost``."""
    figures: dict[str, Figure] = {}
    judges = summary.table("judge")
    if judges:
        figures["judges"] = _grid(
            judges, summary.ks, "Judge scores against k (mean, 95% bootstrap band)"
        )
    retrieval = summary.table("retrieval")
    if retrieval:
        figures["retrieval"] = _grid(
            retrieval, summary.ks, "Retrieval metrics against k (mean, 95% bootstrap band)"
        )
    figures["objective"] = _objective(summary)
    figures["tokens_cost"] = _tokens_cost(summary)
    return figures


def write_plots(summary: SweepSummary, out_dir: Path) -> dict[str, Path]:
    """Write the sweep's PNGs into ``out_dir`` as ``NAME_vs_k.png``; returns name -> path of
    each file written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for name, fig in sweep_figures(summary).items():
        written[name] = out_dir / f"{name}_vs_k.png"
        fig.savefig(written[name])
    return written
