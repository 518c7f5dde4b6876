"""A quality gate for tests: ``assert_quality(result, judge=..., min=...)``.

The gate fails when the LOWER bound of the judge's 95% bootstrap interval is below ``min``,
not when the mean is: a mean hovering around the threshold flips between runs with the noise
of a small sample, a lower bound above it says the judge's mean is above ``min`` with 95%
confidence. So a gate on n rows passes only once the data show it; more rows (a narrower
interval) let a mean closer to ``min`` pass. One scored row shows nothing (its bootstrap
"interval" is the score itself), so a gate on one scored row fails; ``min`` and
``min_coverage`` are fractions in [0, 1] like the scores (another value raises ``ValueError``:
a gate that can never pass, or always does, is a typo, not a gate).

``min_coverage`` (default 1.0) also fails the gate when some applicable rows were not scored (a
typed status: failed call, parse error, empty answer ...): an unscored row is not a passing row.
coverage = n_scored / n_applicable, where a row without a reference answer is not applicable
to a judge that needs one (``skipped_missing_reference``: an unanswerable question of a test
set), so it is neither missing nor passing. The failure message says which rule failed (the
interval's lower bound, the coverage, or both) and gives the mean, the interval, the coverage
and the ``worst`` lowest-scored rows with their explanation or error; the traceback shows the
caller's line, not this module (``__tracebackhide__``).
"""

from __future__ import annotations

from typing import Any

from ragjudge.schema import Aggregate, JudgeInput, JudgeResult, JudgeStatus

NOT_APPLICABLE = JudgeStatus.skipped_missing_reference
"""The status of a row the judge does not apply to (no reference answer to compare with)."""


class QualityGateError(AssertionError):
    """A quality gate failed; the message says why and lists the worst rows; ``problems``
    names each rule that failed (the lower bound, the coverage)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message.splitlines()[0]]


def applicable(agg: Aggregate) -> int:
    """Rows the judge applies to: all but those without a reference (``NOT_APPLICABLE``)."""
    return agg.n_total - agg.status_counts.get(NOT_APPLICABLE.value, 0)


def scored_text(agg: Aggregate) -> str:
    """``8/10 scored``, or ``8/8 scored, 2 not applicable (no reference)``."""
    n_applicable = applicable(agg)
    skipped = agg.n_total - n_applicable
    text = f"{agg.n_scored}/{n_applicable} scored"
    return text + (f", {skipped} not applicable (no reference)" if skipped else "")


def _row(item: JudgeInput, res: JudgeResult, width: int = 80) -> str:
    score = "unscored" if res.score is None else f"{res.score:.3f}"
    why = res.error or res.evidence.explanation or ""
    q = item.question if len(item.question) <= width else item.question[: width - 1] + "…"
    line = f"  {item.id} [{score}, {res.status.value}] {q}"
    return line + (f"\n      {why[:200]}" if why else "")


def assert_quality(
    result: Any,
    *,
    judge: str,
    min: float,
    min_coverage: float = 1.0,
    worst: int = 3,
) -> None:
    """Fail (``QualityGateError``, an ``AssertionError``) when ``judge``'s interval lower
    bound is below ``min`` or its coverage below ``min_coverage``; ``result`` is an
    ``EvaluationResult`` (``ragjudge.evaluate``)."""
    __tracebackhide__ = True  # a failure points at the caller's line
    for arg, value in (("min", min), ("min_coverage", min_coverage)):
        if not 0.0 <= value <= 1.0:  # NaN fails too
            raise ValueError(f"assert_quality: {arg}={value!r} is not in [0, 1] (scores are)")
    if not hasattr(result, "aggregates"):
        raise TypeError(
            "assert_quality: expected the result of ragjudge.evaluate (an EvaluationResult), "
            f"got {type(result).__name__}"
        )
    if judge not in result.aggregates:
        raise QualityGateError(
            f"no judge {judge!r} in the result; it has: {', '.join(result.aggregates)}"
        )
    agg = result.aggregates[judge]
    n_applicable = applicable(agg)
    problems = []
    if agg.mean is None or agg.ci_low is None:
        problems.append("no row was scored" if n_applicable else "no row has a reference")
    elif agg.n_scored < 2:
        problems.append("one scored row shows no interval (the gate needs at least 2)")
    elif agg.ci_low < min:
        problems.append(f"the 95% interval's lower bound {agg.ci_low:.3f} is below {min:g}")
    if n_applicable and agg.n_scored / n_applicable < min_coverage:
        problems.append(
            f"coverage {agg.n_scored}/{n_applicable} is below {min_coverage:.0%} "
            f"(statuses: {agg.status_counts})"
        )
    if not problems:
        return
    mean = "—" if agg.mean is None else f"{agg.mean:.3f} [{agg.ci_low:.3f}, {agg.ci_high:.3f}]"
    shown = result.worst(judge, worst)
    rows = "\n".join(_row(i, r) for i, r in shown)
    raise QualityGateError(
        f"quality gate {judge} >= {min:g} failed: {'; '.join(problems)}\n"
        f"  mean {mean}, {scored_text(agg)}\n"
        f"worst {len(shown)} rows:\n{rows}",
        problems,
    )
