"""The question-type mix: which kinds of question a test set holds, and how many of each.

A mix file is a YAML mapping ``type: weight`` (weights >= 0, at least one > 0), e.g.::

    factoid: 3
    why_how: 1
    unanswerable: 1

Types left out get weight 0. ``quotas(mix, n)`` splits ``n`` by the largest-remainder method:
each type gets ``floor(n * w / W)``, and the questions left over go to the largest remainders
(ties: the order of ``QUESTION_TYPES``), so the quotas always sum to ``n``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from ragjudge.errors import ConfigError

if TYPE_CHECKING:
    from ragjudge.io.yamlfile import KeyPath

QuestionType = Literal["factoid", "why_how", "list", "multi_passage", "comparison", "unanswerable"]
QUESTION_TYPES: tuple[str, ...] = get_args(QuestionType)

DEFAULT_MIX: dict[str, float] = {
    "factoid": 0.35,
    "why_how": 0.15,
    "list": 0.10,
    "multi_passage": 0.15,
    "comparison": 0.10,
    "unanswerable": 0.15,
}
"""Used when no mix is given."""

MULTI_SOURCE = frozenset({"multi_passage", "comparison"})
"""Types whose question joins facts from two passages."""


def check_mix(
    mix: dict[str, float], source: str = "mix", lines: Mapping[KeyPath, int] | None = None
) -> dict[str, float]:
    """``mix`` with every type present (0 when absent); an unknown type, a negative or
    non-numeric weight, or all weights 0 is a ``ConfigError`` naming the key, at its line
    (``source:line: ...``) when ``lines`` (``ragjudge.io.yamlfile``) has it."""
    out = dict.fromkeys(QUESTION_TYPES, 0.0)
    for key, weight in mix.items():
        line = (lines or {}).get((str(key),))
        where = f"{source}:{line}" if line else source
        if key not in out:
            raise ConfigError(
                f"{where}: unknown question type {str(key)!r}; "
                f"known types: {', '.join(QUESTION_TYPES)}"
            )
        number = isinstance(weight, int | float) and not isinstance(weight, bool)
        if not number or not math.isfinite(weight) or weight < 0:
            raise ConfigError(
                f"{where}: weight of {key!r} must be a finite number >= 0, got {weight!r}"
            )
        out[key] = float(weight)
    if sum(out.values()) <= 0:
        raise ConfigError(f"{source}: every weight is 0; give at least one type a weight > 0")
    return out


def load_mix(path: str | Path) -> dict[str, float]:
    """A mix file (see the module docstring); errors name the file and the key's line, an
    empty file says so."""
    from ragjudge.io.yamlfile import expect_mapping, load_yaml

    data, lines = load_yaml(path, "mix file")
    data = expect_mapping(data, str(path), QUESTION_TYPES)
    return check_mix(data, str(path), lines)


def quotas(mix: dict[str, float], n: int) -> dict[str, int]:
    """``n`` split over the types by weight (largest remainder; sums to ``n``)."""
    total = sum(mix.values())
    exact = {t: n * w / total for t, w in mix.items()}
    out = {t: math.floor(x) for t, x in exact.items()}
    left = n - sum(out.values())
    order = sorted(mix, key=lambda t: (-(exact[t] - out[t]), QUESTION_TYPES.index(t)))
    for t in order[:left]:
        out[t] += 1
    return out
