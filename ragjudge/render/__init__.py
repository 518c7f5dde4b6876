"""The one presentation layer: every page ragjudge shows (the sweep summary, the regression
report, the agreement report, the ``ragjudge ui`` pages) is a pydantic model rendered by the
templates in ``ragjudge/render/templates`` through one jinja2 environment.

Contract: HTML templates (``*.html.j2``) are autoescaped, so every text from a run (questions,
answers, documents, claims, ids) is escaped once by jinja2; Markdown templates (``*.md.j2``)
are not, and escape user text with the ``md`` filter. JSON is the model's own dump
(``to_json``). Numbers are formatted by the same filters everywhere: ``num`` (3 decimals, "–"
for none), ``signed`` (+0.000), ``pval`` (2 significant digits), ``pct`` (0%), ``agg``
(``mean [lo, hi] (scored/total)``).
"""

from __future__ import annotations

import base64
import json
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from pydantic import BaseModel

from ragjudge.errors import ConfigError
from ragjudge.schema import Aggregate


def check_out_dir(out_dir: str | Path) -> Path:
    """The folder a report is written to, refused when a file of that name exists
    (``ConfigError``); the commands check it before any work, not after a run."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out}: --out must be a folder, and a file of that name exists")
    return out


def fmt_aggregate(a: Aggregate | None, digits: int = 3) -> str:
    """``0.812 [0.771, 0.850] (48/50)``, or ``n/a (0/50)`` when nothing was scored."""
    if a is None:
        return "n/a"
    if a.mean is None:
        return f"n/a ({a.n_scored}/{a.n_total})"
    cov = f" ({a.n_scored}/{a.n_total})" if a.n_total else ""
    return f"{a.mean:.{digits}f} [{a.ci_low:.{digits}f}, {a.ci_high:.{digits}f}]{cov}"


def md_escape(text: object) -> str:
    """Make user text safe inside a Markdown table cell (pipes, newlines, HTML)."""
    s = " ".join(str(text).split())
    for ch, rep in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        s = s.replace(ch, rep)
    return s


def data_uri(png: bytes) -> str:
    """A PNG as a ``data:`` URI, so an HTML file carries its plots."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _num(x: float | None, d: int = 3) -> str:
    return "–" if x is None else f"{x:.{d}f}"


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{x:+.3f}"


def _pval(x: float | None) -> str:
    return "–" if x is None else f"{x:.2g}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:.0%}"


@cache
def environment() -> Environment:
    """The one jinja2 environment (module docstring)."""
    env = Environment(
        loader=PackageLoader("ragjudge.render", "templates"),
        autoescape=lambda name: name is None or ".html" in name,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=StrictUndefined,
    )
    env.filters.update(
        num=_num, signed=_signed, pval=_pval, pct=_pct, md=md_escape, agg=fmt_aggregate
    )
    return env


def render(template: str, **context: Any) -> str:
    """Render one template of ``ragjudge/render/templates`` with ``context``."""
    return environment().get_template(template).render(**context)


def to_json(model: BaseModel) -> str:
    """The model as indented, key-sorted JSON (the machine-readable form of every page)."""
    return json.dumps(model.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
