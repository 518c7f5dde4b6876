"""PNG plots of a sweep (matplotlib, Agg backend): metrics against k with 95% interval bands,
the objective with the chosen k and the band of k within noise, and tokens and cost against k.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ragjudge.schema import Aggregate
from ragjudge.sweep.analysis import SweepSummary


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


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


def _grid(
    plt: Any, table: dict[str, dict[int, Aggregate]], ks: list[int], title: str, path: Path
) -> None:
    names = list(table)
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        _band(ax, ks, table[name], name)
        ax.set_title(name)
        ax.set_xlabel("k")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(summary: SweepSummary, out_dir: Path) -> dict[str, Path]:
    """Write the sweep's PNGs into ``out_dir``; returns name -> path of each file written."""
    plt = _pyplot()
    out_dir.mkdir(parents=True, exist_ok=True)
    ks = summary.ks
    written: dict[str, Path] = {}

    judges = summary.table("judge")
    if judges:
        p = out_dir / "judges_vs_k.png"
        _grid(plt, judges, ks, "Judge scores against k (mean, 95% bootstrap band)", p)
        written["judges"] = p
    retrieval = summary.table("retrieval")
    if retrieval:
        p = out_dir / "retrieval_vs_k.png"
        _grid(plt, retrieval, ks, "Retrieval metrics against k (mean, 95% bootstrap band)", p)
        written["retrieval"] = p

    objective = summary.table("objective").get("objective", {})
    fig, ax = plt.subplots(figsize=(6, 3.6))
    _band(ax, ks, objective, "objective")
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
    fig.tight_layout()
    p = out_dir / "objective_vs_k.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    written["objective"] = p

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6))
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
    ax1.set_xticks(ks)
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
    ax2.set_xticks(ks)
    ax2.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    p = out_dir / "tokens_cost_vs_k.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    written["tokens_cost"] = p
    return written
