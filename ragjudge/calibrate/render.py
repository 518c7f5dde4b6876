"""The agreement report as one self-contained HTML page (plots inlined as base64 PNG; every
piece of user text escaped by jinja2's autoescape)."""

from __future__ import annotations

import base64

import jinja2

from .analyze import AgreementReport, DimensionReport
from .plots import confusion_plot, reliability_diagram, score_scatter

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>ragjudge agreement: {{ r.source }}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1100px; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #666; font-size: 0.88em; }
.plots img { margin-right: 1em; vertical-align: top; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 1.6em; }
</style></head><body>
<h1>Human vs judge agreement</h1>
<p>Run <b>{{ r.source }}</b>; labels <code>{{ r.labels_path }}</code>; decision threshold
{{ r.threshold }}; {{ r.n_resamples }} bootstrap resamples of items (95% intervals).</p>
{% for n in r.notes %}<p class="note">{{ n }}</p>{% endfor %}
{% for d in dims %}{% set a = d.rep.agreement %}
<h2 id="{{ a.dimension }}">{{ a.dimension }} <span class="note">({{ a.scale }} labels)</span></h2>
<p>{{ a.n_labelled }} labelled items ({{ a.n_labels }} labels, {{ a.n_annotators }}
annotator{{ '' if a.n_annotators == 1 else 's' }}), {{ a.n_scored }} scored by the judge.
Judge statuses: {% for s, c in a.status_counts.items() %}{{ s }} {{ c }}{% if not loop.last %},
{% endif %}{% endfor %}.</p>
{% for n in a.notes %}<p class="note">{{ n }}</p>{% endfor %}
<table><tr><th>statistic</th><th>value</th><th>95% CI</th><th>n</th><th>note</th></tr>
{% for e in a.estimates %}<tr><td>{{ e.name }}</td>
<td class="num">{{ fmt(e.value) }}</td><td class="num">{{ ci(e) }}</td>
<td class="num">{{ e.n }}</td><td class="note">{{ e.note or '' }}</td></tr>{% endfor %}
{% if a.inter_annotator_alpha %}{% set e = a.inter_annotator_alpha %}
<tr><td>inter-annotator alpha (ceiling)</td><td class="num">{{ fmt(e.value) }}</td>
<td class="num">{{ ci(e) }}</td><td class="num">{{ e.n }}</td>
<td class="note">{{ e.note or '' }}</td></tr>{% endif %}
</table>
{% if d.rep.calibration %}
<h3>Calibration (score to P(human yes), cross-validated)</h3>
<table><tr><th>method</th><th>folds</th><th>Brier before</th><th>Brier after</th>
<th>ECE before</th><th>ECE after</th><th>threshold P(yes)=0.5</th></tr>
{% for c in d.rep.calibration %}<tr><td>{{ c.method }}</td><td class="num">{{ c.n_folds }}</td>
<td class="num">{{ c.brier_before.fmt() }}</td><td class="num">{{ c.brier_after.fmt() }}</td>
<td class="num">{{ c.ece_before.fmt() }}</td><td class="num">{{ c.ece_after.fmt() }}</td>
<td class="num">{{ fmt(c.threshold) }}</td></tr>{% endfor %}</table>
{% elif d.rep.calibration_note %}<p class="note">Calibration: {{ d.rep.calibration_note }}</p>
{% endif %}
<div class="plots">{% for title, png in d.plots %}
<img alt="{{ title }}" title="{{ title }}" src="data:image/png;base64,{{ png }}">{% endfor %}</div>
<h3>Estimated human mean over the run</h3>
{% if d.rep.estimation.applicable %}
<table><tr><th>method</th><th>estimate</th><th>95% CI</th><th>width</th><th>n labelled</th>
<th>N unlabelled</th></tr>
{% for m in d.rep.estimation.estimates %}<tr><td>{{ m.method }}{% if m.lam is not none %}
(lambda {{ '%.2f' % m.lam }}){% endif %}</td><td class="num">{{ fmt(m.value) }}</td>
<td class="num">[{{ fmt(m.ci_low) }}, {{ fmt(m.ci_high) }}]</td>
<td class="num">{{ fmt(m.ci_high - m.ci_low) }}</td><td class="num">{{ m.n_labelled }}</td>
<td class="num">{{ m.n_unlabelled }}</td></tr>{% endfor %}</table>
{% endif %}<p class="note">{{ d.rep.estimation.note or '' }}</p>
<h3>Bias probes</h3>
<table><tr><th>probe</th><th>statistic</th><th>value</th><th>95% CI</th><th>note</th></tr>
{% for b in d.rep.bias %}{% if b.applicable %}{% for e in b.estimates %}
<tr><td>{{ b.probe }}</td><td>{{ e.name }}</td><td class="num">{{ fmt(e.value) }}</td>
<td class="num">{{ ci(e) }}</td><td class="note">{{ e.note or b.note or '' }}</td></tr>
{% endfor %}{% else %}<tr><td>{{ b.probe }}</td><td colspan="3">n/a</td>
<td class="note">{{ b.note or '' }}</td></tr>{% endif %}{% endfor %}</table>
{% endfor %}
</body></html>
"""


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _ci(e: object) -> str:
    lo, hi = getattr(e, "ci_low", None), getattr(e, "ci_high", None)
    return "" if lo is None or hi is None else f"[{lo:.3f}, {hi:.3f}]"


def _b64(png: bytes) -> str:
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
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.from_string(_TEMPLATE)
    dims = [
        {
            "rep": d,
            "plots": [(t, _b64(png)) for t, png in dimension_plots(d, report.threshold)],
        }
        for d in report.dimensions
    ]
    return template.render(r=report, dims=dims, fmt=_fmt, ci=_ci)
