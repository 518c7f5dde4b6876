"""Versioned prompt templates (jinja2).

A prompt lives in ``prompts/<name>.v<N>.j2`` (``name`` may contain ``/``, e.g.
``judges/faithfulness``). The file defines two jinja2 blocks, ``system`` and ``user``; each
becomes one chat message (a missing ``system`` block gives a user-only prompt).
``load_prompt("judges/faithfulness")`` picks the highest version, ``load_prompt("x@v1")`` a
given one. ``Prompt.ref`` is the ``PromptRef(name, "v<N>")`` that enters cache keys, run
manifests and the test server's ``X-Ragjudge-Template`` header.

Untrusted text (questions, answers, documents) must only enter a template through the
``fence`` filter: ``{{ answer | fence("answer") }}`` renders ``<answer>...</answer>`` and
``{{ text | fence("context", id=3) }}`` renders ``<context id="3">...</context>``. Inside the
fenced text every look-alike of a fence tag (``<context``, ``</answer >``, any case, any
spacing) has its ``<`` escaped as ``&lt;``, so the data cannot close its fence and pose as
instructions. Every system prompt says that fenced content is data, not instructions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import jinja2

from ragjudge.errors import ConfigError
from ragjudge.resources import prompts_dir
from ragjudge.schema import PromptRef

FENCE_TAGS = ("context", "question", "answer", "reference", "claim", "point")
"""Tag names used to fence untrusted text; their look-alikes inside data are escaped."""

_LOOKALIKE = re.compile(r"<(\s*/?\s*(?:" + "|".join(FENCE_TAGS) + r")\b)", re.IGNORECASE)
_FILE = re.compile(r"^(?P<base>.+)\.v(?P<num>\d+)\.j2$")


def escape_fenced(text: str) -> str:
    """``text`` with every ``<`` that starts a fence-tag look-alike written as ``&lt;``."""
    return _LOOKALIKE.sub(r"&lt;\1", text)


def fence(text: Any, tag: str, id: Any = None) -> str:
    """``<tag id="..">escaped text</tag>``: how untrusted text enters a prompt."""
    if tag not in FENCE_TAGS:
        raise ValueError(f"unknown fence tag {tag!r}; use one of {FENCE_TAGS}")
    attr = f' id="{id}"' if id is not None else ""
    return f"<{tag}{attr}>{escape_fenced(str(text))}</{tag}>"


@dataclass(frozen=True)
class Prompt:
    """One versioned template; ``render`` gives chat messages."""

    name: str
    version: str
    path: Path
    _template: jinja2.Template = field(repr=False, compare=False)

    @cached_property
    def ref(self) -> PromptRef:
        return PromptRef(name=self.name, version=self.version)

    def render(self, **variables: Any) -> list[dict[str, str]]:
        """Messages ``[{"role": "system", ...}, {"role": "user", ...}]`` for ``variables``."""
        messages: list[dict[str, str]] = []
        ctx = self._template.new_context(variables)
        for role in ("system", "user"):
            block = self._template.blocks.get(role)
            if block is None:
                continue
            text = "".join(block(ctx)).strip()
            if text:
                messages.append({"role": role, "content": text})
        if not messages or messages[-1]["role"] != "user":
            raise ConfigError(f"prompt {self.name}@{self.version} has no 'user' block")
        return messages


def _environment(root: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    env.filters["fence"] = fence
    return env


def available_prompts(root: Path | None = None) -> dict[str, list[int]]:
    """Prompt names -> the versions found, ascending."""
    base = root or prompts_dir()
    out: dict[str, list[int]] = {}
    for path in base.rglob("*.j2"):
        m = _FILE.match(path.relative_to(base).as_posix())
        if m:
            out.setdefault(m["base"], []).append(int(m["num"]))
    return {k: sorted(v) for k, v in sorted(out.items())}


@lru_cache(maxsize=64)
def _load(name: str, version: int | None, root: Path) -> Prompt:
    versions = available_prompts(root).get(name)
    if not versions:
        known = ", ".join(available_prompts(root)) or "none"
        raise ConfigError(f"unknown prompt {name!r}; known prompts: {known}")
    num = versions[-1] if version is None else version
    if num not in versions:
        raise ConfigError(f"prompt {name!r} has no version v{num}; it has: {versions}")
    rel = f"{name}.v{num}.j2"
    template = _environment(root).get_template(rel)
    return Prompt(name=name, version=f"v{num}", path=root / rel, _template=template)


def load_prompt(name: str, *, root: Path | None = None) -> Prompt:
    """The template ``name`` (``"judges/faithfulness"`` = newest, ``"...@v1"`` = that one)."""
    base, _, ver = name.partition("@")
    version: int | None = None
    if ver:
        if not re.fullmatch(r"v?\d+", ver):
            raise ConfigError(f"bad prompt version {ver!r} in {name!r}; expected e.g. v1")
        version = int(ver.lstrip("v"))
    return _load(base, version, (root or prompts_dir()).resolve())


# ----------------------------------------------------------------------------- context budget


@dataclass(frozen=True)
class ContextBudget:
    """Truncation policy for contexts that would overflow the model's window.

    Each context keeps at most ``min(max_chars_per_context, max_total_chars // n)`` characters
    (n = number of contexts); a cut context ends with ``TRUNCATION_MARK``. Defaults (6,000
    per context, 48,000 in total, about 12k tokens) fit any current chat model's window
    together with the judge instructions. What was cut is reported by ``fit_contexts``.
    """

    max_chars_per_context: int = 6_000
    max_total_chars: int = 48_000


TRUNCATION_MARK = " [...truncated]"


def fit_contexts(
    contexts: list[str], budget: ContextBudget | None = None
) -> tuple[list[str], dict[str, float]]:
    """``contexts`` cut to ``budget``, with features ``contexts_truncated`` (how many were
    cut) and ``context_chars_dropped`` (characters removed), both 0 when nothing was cut."""
    policy = budget or ContextBudget()
    if not contexts:
        return [], {"contexts_truncated": 0.0, "context_chars_dropped": 0.0}
    cap = max(1, min(policy.max_chars_per_context, policy.max_total_chars // len(contexts)))
    out: list[str] = []
    cut = dropped = 0
    for text in contexts:
        if len(text) > cap:
            out.append(text[:cap] + TRUNCATION_MARK)
            cut += 1
            dropped += len(text) - cap
        else:
            out.append(text)
    return out, {"contexts_truncated": float(cut), "context_chars_dropped": float(dropped)}


OFFLINE_MAX_CHARS = ContextBudget.max_chars_per_context
"""Longest text (a context, the answer, the reference) an offline judge or the extractive
generator reads: 6,000 characters (about 1,000 words, above any retrieval chunk), the LLM
path's ``ContextBudget``. Longer texts are cut, so that one 5 MB document costs seconds and
bounded memory instead of minutes; the cut is recorded (``cap_item``)."""
OFFLINE_MAX_TOTAL = ContextBudget.max_total_chars
"""Most characters of all contexts of one item together (each keeps ``total // n`` at least)."""


def cap_texts(
    texts: Sequence[str], per_text: int, total: int | None = None
) -> tuple[list[str], int, int]:
    """``texts`` each cut to ``min(per_text, total // n)`` characters (a cut text ends with
    ``TRUNCATION_MARK``; a text cut before passes unchanged), with how many were cut and the
    characters dropped."""
    cap = per_text if total is None or not texts else min(per_text, max(1, total // len(texts)))
    out: list[str] = []
    cut = dropped = 0
    for text in texts:
        if len(text) > cap + len(TRUNCATION_MARK):
            out.append(text[:cap] + TRUNCATION_MARK)
            cut += 1
            dropped += len(text) - cap
        else:
            out.append(text)
    return out, cut, dropped
