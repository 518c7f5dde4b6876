"""Agreement plots as PNG bytes (matplotlib, Agg): reliability diagram, confusion matrix at the
decision threshold, and judge score against the human label."""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from .calibration import CalibrationReport, reliability_bins


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return buf.getvalue()


def _figure(width: float, height: float) -> Figure:
    # A bare Figure (no pyplot state): safe in threads and never opens a window.
    return Figure(figsize=(width, height))


def reliability_diagram(
    scores: Sequence[float], yes: Sequence[bool], reports: Sequence[CalibrationReport], title: str
) -> bytes:
    """Observed yes-rate against predicted P(yes) per bin: raw judge score and each calibrator
    (its cross-validated probabilities), with the diagonal of perfect calibration."""
    fig = _figure(5.0, 4.2)
    ax = fig.add_subplot()
    y = np.asarray(yes, float)
    series = [("raw score", np.asarray(scores, float))] + [
        (f"{r.method} (cross-validated)", np.asarray(r.cv_probabilities)) for r in reports
    ]
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--", label="perfect")
    for label, p in series:
        bins = reliability_bins(p, y)
        ax.plot(
            [b["predicted"] for b in bins],
            [b["observed"] for b in bins],
            marker="o",
            label=label,
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted P(human yes)")
    ax.set_ylabel("observed share of human yes")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    return _png(fig)


def confusion_plot(confusion: Sequence[Sequence[int]], threshold: float, title: str) -> bytes:
    """2x2 counts: rows human no/yes, columns judge no/yes at the threshold."""
    fig = _figure(3.4, 3.0)
    ax = fig.add_subplot()
    mat = np.asarray(confusion, float)
    ax.imshow(mat, cmap="Blues")
    for i in range(2):
        for j in range(2):
            dark = mat[i, j] > mat.max() / 2
            ax.text(
                j,
                i,
                str(int(mat[i, j])),
                ha="center",
                va="center",
                fontsize=12,
                color="white" if dark else "black",
            )
    ax.set_xticks([0, 1], ["no", "yes"])
    ax.set_yticks([0, 1], ["no", "yes"])
    ax.set_xlabel(f"judge (score >= {threshold:g})")
    ax.set_ylabel("human")
    ax.set_title(title, fontsize=10)
    return _png(fig)


def score_scatter(
    scores: Sequence[float], human: Sequence[float], title: str, *, seed: int = 0
) -> bytes:
    """Judge score (x) against the human label on [0, 1] (y, jittered so ties stay visible)."""
    fig = _figure(5.0, 3.6)
    ax = fig.add_subplot()
    h = np.asarray(human, float)
    jitter = np.random.default_rng(seed).uniform(-0.03, 0.03, size=h.size)
    ax.scatter(np.asarray(scores, float), h + jitter, s=14, alpha=0.6)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.08, 1.08)
    ax.set_xlabel("judge score")
    ax.set_ylabel("human label (0-1, jittered)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    return _png(fig)
