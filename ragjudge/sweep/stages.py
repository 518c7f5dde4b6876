"""When a stage of a run failed as a whole: every LLM call of it failed (endpoint unreachable,
wrong key, unknown model), so its rows say nothing about the pipeline.

A stage failed when it made at least one call and none succeeded. Rows that made no call are
left out of the count, so an unanswerable question (``skipped_missing_reference``) or an item
refused before judging (``invalid_input``) never hides a failed stage:

- reranking: an LLM reranker whose ``failed_calls`` equals its ``calls`` (> 0);
- generation: every answer generated in this process carries an ``error``;
- judging, per judge: its coverage (results with a score / results that made a call) is below
  the coverage floor (``coverage_floor``: ``RAGJUDGE_MIN_COVERAGE``, default 0.5); a judge
  whose every call failed, for any reason (unreachable endpoint, unparseable replies), is
  always below it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragjudge.errors import ConfigError, RagjudgeError
from ragjudge.schema import Answer, JudgeResult, JudgeStatus

CALL_FAILURES = frozenset(
    {JudgeStatus.provider_error, JudgeStatus.timeout, JudgeStatus.rate_limited}
)
"""Statuses that mean the endpoint could not be used, not that the judge could not decide."""

NO_CALL = frozenset(
    {JudgeStatus.skipped_missing_reference, JudgeStatus.skipped_budget, JudgeStatus.invalid_input}
)
"""Statuses of results that were decided without calling the judge's model."""


class StageFailedError(RagjudgeError):
    """A stage failed as a whole; the message names the stage and the first error."""

    partial: Any = None
    """What was computed before the failure was found, when the raiser keeps it (``evaluate``
    attaches its ``EvaluationResult``)."""


DEFAULT_COVERAGE_FLOOR = 0.5
"""Share of a judge's called results that must be scored for its stage to count as done."""


def coverage_floor() -> float:
    """``RAGJUDGE_MIN_COVERAGE`` (a share in 0..1), else ``DEFAULT_COVERAGE_FLOOR``."""
    raw = (os.environ.get("RAGJUDGE_MIN_COVERAGE") or "").strip()
    if not raw:
        return DEFAULT_COVERAGE_FLOOR
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ConfigError(
            f"RAGJUDGE_MIN_COVERAGE={raw!r} is not a share between 0 and 1 (e.g. 0.5)"
        )
    return value


def judging_failure(
    results: Mapping[str, Sequence[JudgeResult]], floor: float | None = None
) -> str | None:
    """One line naming each judge whose coverage (decided / called: a score or ``no_claims``)
    is below ``floor``
    (default ``coverage_floor()``) with its dominant failure status and count, and the first
    error of that status; None when every judge that made a call is at or above it. A judge
    that scored nothing is below any floor."""
    floor = coverage_floor() if floor is None else floor
    failed = []
    for name, rs in results.items():
        called = [r for r in rs if r.status not in NO_CALL]
        failures = [(r.status.value, r.error) for r in called if not _decided(r)]
        line = coverage_problem(name, len(called) - len(failures), len(called), failures, floor)
        if line is not None:
            failed.append(line)
    if not failed:
        return None
    return " ".join(("judging failed: " + "; ".join(failed)).split())[:1000]


def coverage_problem(
    name: str,
    decided: int,
    called: int,
    failures: Sequence[tuple[str, str | None]],
    floor: float,
    verb: str = "scored",
) -> str | None:
    """``NAME scored D/C (P%, floor F%); STATUS xN: first error`` when ``decided / called`` is
    below ``floor`` (nothing decided is below any floor), naming the commonest failure status
    of ``failures`` (status, error) and the first error of that status; None when at or above
    it or nothing was called."""
    if not called or (decided and decided >= floor * called):
        return None
    line = f"{name} {verb} {decided}/{called} ({decided / called:.0%}, floor {floor:.0%})"
    if not failures:
        return line
    status, n = Counter(s for s, _ in failures).most_common(1)[0]
    first = next((e for s, e in failures if s == status and e), None)
    return line + f"; {status} x{n}" + (f": {first}" if first else "")


def _decided(r: JudgeResult) -> bool:
    """A score, or the judge's own finding that there is nothing to score (``no_claims``)."""
    return r.score is not None or r.status == JudgeStatus.no_claims


def generation_failure(answers: Iterable[Answer]) -> str | None:
    """The message when every answer generated (at least one) carries an error."""
    got = list(answers)
    if not got or any(a.error is None for a in got):
        return None
    return (
        f"generation failed: every one of {len(got)} answers failed, so nothing can be judged; "
        f"first error: {got[0].error}"
    )


def reranking_failure(retriever: Any) -> str | None:
    """The message when an LLM reranker stage of ``retriever`` (a ``Pipeline``) made calls and
    every one failed (it then left the order as it was)."""
    for stage in getattr(retriever, "stages", ()) or ():
        reranker = stage[0] if isinstance(stage, tuple) else getattr(stage, "reranker", stage)
        calls, failed = getattr(reranker, "calls", 0), getattr(reranker, "failed_calls", 0)
        if calls and failed == calls:
            first = getattr(reranker, "last_error", None) or "no reply"
            name = getattr(reranker, "name", type(reranker).__name__)
            return (
                f"reranking failed: every one of {calls} calls of {name} failed, so the "
                f"rankings were not re-ordered; first error: {first}"
            )
    return None
