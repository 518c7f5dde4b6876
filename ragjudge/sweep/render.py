"""Writing a sweep's results to a folder: tables (CSV, JSON), plots (PNG) and a short summary
in Markdown and HTML (jinja2, autoescaped). The HTML is one self-contained file: its plots are
embedded as base64 PNG data URIs, like the regression report's. Every number is printed as
``mean [ci_low, ci_high] (n scored/n total)``.
"""

from __future__ import annotations

import base64
import csv
import json
from pathlib import Path

from jinja2 import Environment, select_autoescape

from ragjudge.schema import Aggregate
from ragjudge.sweep.analysis import SweepSummary
from ragjudge.sweep.plots import write_plots


def fmt(a: Aggregate | None, digits: int = 3) -> str:
    """``0.812 [0.771, 0.850] (48/50)``, or ``n/a (0/50)`` when nothing was scored."""
    if a is None:
        return "n/a"
    if a.mean is None:
        return f"n/a ({a.n_scored}/{a.n_total})"
    cov = f" ({a.n_scored}/{a.n_total})" if a.n_total else ""
    return f"{a.mean:.{digits}f} [{a.ci_low:.{digits}f}, {a.ci_high:.{digits}f}]{cov}"


def choice_sentence(summary: SweepSummary) -> str:
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
        text += f"; the cheapest of these is k = {smallest}"
    return text + "."


def objective_text(summary: SweepSummary) -> str:
    c = summary.choice
    parts = " + ".join(f"{w:g}·{m}" for m, w in sorted(c.weights.items()))
    total = sum(c.weights.values())
    text = f"objective = ({parts}) / {total:g} over the metrics scored for a case"
    if c.penalty:
        text += f", minus {c.penalty}"
    return text


def _md_table(summary: SweepSummary) -> str:
    names = [*summary.judges, *summary.retrieval_metrics, "objective"]
    tables = summary.table()
    head = "| metric | " + " | ".join(f"k={k}" for k in summary.ks) + " |"
    sep = "|---|" + "---|" * len(summary.ks)
    rows = [head, sep]
    for name in names:
        per_k = tables.get(name, {})
        cells = []
        for k in summary.ks:
            a = per_k.get(k)
            cells.append(f"{a.mean:.3f}" if a is not None and a.mean is not None else "n/a")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def render_markdown(summary: SweepSummary, plots: dict[str, Path]) -> str:
    m = summary.manifest
    lines = [f"# k-sweep {summary.run_id}", ""]
    if m is not None:
        lines += [
            f"Data set **{m.dataset_name}** ({summary.n_cases} cases, "
            f"hash `{m.dataset_hash[:12]}`), "
            f"config `{m.config_hash}`, ragjudge {m.ragjudge_version}, status **{m.status}**.",
            "",
        ]
    lines += [f"**{choice_sentence(summary)}**", "", f"Objective: {objective_text(summary)}.", ""]
    lines += ["## Means per k", "", _md_table(summary), ""]
    lines += [
        "Means with 95% bootstrap intervals and coverage are in `metrics.csv`; "
        "the paired tests against the best k in `choice.json`.",
        "",
    ]
    c = summary.choice
    if c.tests:
        lines += ["## Difference from the best k (paired bootstrap)", ""]
        lines += ["| k | mean diff | 95% CI | within noise |", "|---|---|---|---|"]
        for t in c.tests:
            flag = "yes" if t.within_noise else "no"
            lines.append(
                f"| {t.k} | {t.diff:+.3f} | [{t.ci_low:+.3f}, {t.ci_high:+.3f}] | {flag} |"
            )
        lines.append("")
    lines += ["## Plots", ""]
    lines += [f"![{name}]({p.name})" for name, p in plots.items()]
    lines.append("")
    return "\n".join(lines)


_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>k-sweep {{ s.run_id }}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:.82em}
td,th{border:1px solid #ccc;padding:.3em .5em;text-align:right;white-space:nowrap}
small{color:#666}
td:first-child,th:first-child{text-align:left}
.choice{background:#eef7ee;border-left:4px solid #2a2;padding:.6em 1em}
.best{background:#dff0d8}.noise{background:#f3faf1}
img{max-width:100%;margin:.5em 0}
</style></head><body>
<h1>k-sweep {{ s.run_id }}</h1>
{% if m %}<p>Data set <b>{{ m.dataset_name }}</b> ({{ s.n_cases }} cases, hash
<code>{{ m.dataset_hash[:12] }}</code>), config <code>{{ m.config_hash }}</code>,
ragjudge {{ m.ragjudge_version }}, status <b>{{ m.status }}</b>.</p>{% endif %}
<p class="choice">{{ choice }}</p>
<p>{{ objective }}.</p>
<h2>Per k: mean [95% CI] (scored/total)</h2>
<table><tr><th>metric</th>
{% for k in s.ks %}<th class="{{ cls[k] }}">k={{ k }}</th>{% endfor %}</tr>
{% for name, cells in rows %}<tr><td>{{ name }}</td>
{% for k, mean, ci, cov in cells %}<td class="{{ cls[k] }}"><b>{{ mean }}</b><br>
<small>{{ ci }}<br>{{ cov }}</small></td>{% endfor %}</tr>
{% endfor %}</table>
<h2>Plots</h2>
{% for name, src in plots %}<img class="plot" src="{{ src }}" alt="{{ name }}">{% endfor %}
</body></html>
"""


def _cell(a: Aggregate | None) -> tuple[str, str, str]:
    """(mean, [lo, hi], scored/total) for one HTML table cell."""
    if a is None:
        return "n/a", "", ""
    cov = f"{a.n_scored}/{a.n_total}"
    if a.mean is None:
        return "n/a", "", cov
    return f"{a.mean:.3f}", f"[{a.ci_low:.3f}, {a.ci_high:.3f}]", cov


def _data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def render_html(summary: SweepSummary, plots: dict[str, Path]) -> str:
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    tables = summary.table()
    names = [*summary.judges, *summary.retrieval_metrics, "objective"]
    rows = [
        (name, [(k, *_cell(tables.get(name, {}).get(k))) for k in summary.ks]) for name in names
    ]
    c = summary.choice
    cls = {
        k: "best" if k == c.best_k else ("noise" if k in c.within_noise else "") for k in summary.ks
    }
    return env.from_string(_HTML).render(
        s=summary,
        m=summary.manifest,
        choice=choice_sentence(summary),
        objective=objective_text(summary),
        rows=rows,
        cls=cls,
        plots=[(n, _data_uri(p)) for n, p in plots.items()],
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
