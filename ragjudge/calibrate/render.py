"""The agreement report as one self-contained HTML page (plots inlined as base64 PNG), rendered
by the one presentation layer (``ragjudge.render``, which escapes every piece of user text)."""

from __future__ import annotations

import base64

from ragjudge.render import render

from .analyze import AgreementReport, DimensionReport
from .plots import confusion_plot, reliability_diagram, score_scatter


def fmt_value(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def fmt_ci(e: object) -> str:
    lo, hi = getattr(e, "ci_low", None), getattr(e, "ci_high", None)
    return "" if lo is None or hi is None else f"[{lo:.3f}, {hi:.3f}]"


def b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def dimension_plots(rep: DimensionReport, threshold: float) -> list[tuple[str, bytes]]:
    """(title, PNG) of the plots that apply to one dimension."""
    dim = rep.agreement.dimension
    out: list[tuple[str, bytes]] = []
    if rep.agreement.confusion is not None:
        out.append(
            (f"{dim}: confusion matrix", confusion_plot(rep.agreement.confusion, threshold, dim))
        )
    if rep.calibration:
        pts = [p for p in rep.points if p.yes is not None]
        out.append(
            (
                f"{dim}: reliability diagram",
                reliability_diagram(
                    [p.score for p in pts],
                    [bool(p.yes) for p in pts],
                    rep.calibration,
                    f"{dim}: reliability",
                ),
            )
        )
    if rep.points and rep.agreement.scale != "pairwise":
        out.append(
            (
                f"{dim}: judge score vs human label",
                score_scatter([p.score for p in rep.points], [p.human for p in rep.points], dim),
            )
        )
    return out


def render_html(report: AgreementReport) -> str:
    """The agreement page (``agreement.html.j2`` of the one presentation layer)."""
    dims = [
        {
            "rep": d,
            "plots": [(t, b64(png)) for t, png in dimension_plots(d, report.threshold)],
        }
        for d in report.dimensions
    ]
    return render("agreement.html.j2", r=report, dims=dims, fmt=fmt_value, ci=fmt_ci)
