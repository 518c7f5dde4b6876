"""Coverage of a judging stage: a judge whose coverage (decided / called) is below the floor
(``coverage_floor``: ``RAGJUDGE_MIN_COVERAGE``, else the config file, default 0.5) failed as a
whole; every call failing is always below it. Used by the sweep, ``evaluate()``, ``judge``,
``testset`` (its question writer too) and ``report`` (why a failed run is refused)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragjudge.errors import ConfigError, RagjudgeError
from ragjudge.schema import JudgeResult, JudgeStatus
from ragjudge.userconfig import setting

if TYPE_CHECKING:
    from ragjudge.store.rows import JudgeResults, Key

FLOOR_ENV = "RAGJUDGE_MIN_COVERAGE"

CALL_FAILURES = frozenset(
    {JudgeStatus.provider_error, JudgeStatus.timeout, JudgeStatus.rate_limited}
)
"""Statuses that mean the endpoint could not be used, not that the judge could not decide
(``judge_error``, the judge's own code raising, is a failure of the judge: it counts against its
coverage like any undecided result, but is not one of these)."""

NO_CALL = frozenset(
    {JudgeStatus.skipped_missing_reference, JudgeStatus.skipped_budget, JudgeStatus.invalid_input}
)
"""Statuses of results that were decided without calling the judge's model."""


class StageFailedError(RagjudgeError):
    """A stage failed as a whole; the message names the stage and the first error."""

    partial: Any = None
    """What was computed before the failure was found, when the raiser keeps it (``evaluate``
    attaches its ``EvaluationResult``)."""


FIRST_ERROR_CHARS = 240
"""Most characters of the error a failure line quotes for each judge (the line names them
all)."""

DEFAULT_COVERAGE_FLOOR = 0.5
"""Share of a judge's called results that must be scored for its stage to count as done."""


def coverage_floor() -> float:
    """``RAGJUDGE_MIN_COVERAGE`` (a share in 0..1), else the config file's ``[judges]
    min_coverage`` (``ragjudge.userconfig``), else ``DEFAULT_COVERAGE_FLOOR``."""
    raw = setting(FLOOR_ENV)
    if raw is None:
        return DEFAULT_COVERAGE_FLOOR
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"{FLOOR_ENV}={raw!r} is not a share between 0 and 1 (e.g. 0.5)")
    return value


Tally = list[tuple[str, tuple[str, str | None] | None]]
"""A judge's called results as (the backend that decided, (status, error) when not decided)."""


def judging_failure(
    results: Mapping[str, Sequence[JudgeResult]], floor: float | None = None
) -> str | None:
    """One line naming each judge whose coverage (decided / called: a score or ``no_claims``)
    is below ``floor`` (default ``coverage_floor()``) with its dominant failure status and
    count, and the first error of that status; None when every judge that made a call is at or
    above it. A judge that scored nothing is below any floor. A judge whose results were
    decided by two backends (the cascade: ``offline`` and ``llm``) is also held to the floor
    on each backend's share alone, so rows kept offline never hide that every escalated call
    failed."""
    tallies: dict[str, Tally] = {}
    for name, rs in results.items():
        tallies[name] = [
            (r.backend, None if decided(r) else (r.status.value, r.error))
            for r in rs
            if r.status not in NO_CALL
        ]
    return _failure_line(tallies, floor)


def stored_judging_failure(
    results: JudgeResults, names: Sequence[str] | None = None, floor: float | None = None
) -> str | None:
    """``judging_failure`` over a run's stored results (of the judges in ``names``, in that
    order; all when None, by name), reading each result's status and score from their columns
    and parsing only the results that failed (for the error the line quotes) and, of a judge
    with a failure, the backend field of the others: the same line, without parsing every
    result of a run that went well."""
    scores = results.scores
    called: dict[str, list[Key]] = {}
    failing: set[str] = set()
    for key, status in results.statuses.items():
        name = key[0]
        if status in NO_CALL or (names is not None and name not in names):
            continue
        called.setdefault(name, []).append(key)
        if not is_decided(scores[key], status):
            failing.add(name)
    tallies: dict[str, Tally] = {}
    for name, keys in called.items():
        if name not in failing:
            tallies[name] = [("", None)] * len(keys)
            continue
        tallies[name] = []
        for key in keys:
            if is_decided(scores[key], results.status(key)):
                tallies[name].append((results.backend(key), None))
            else:
                r = results[key]
                tallies[name].append((r.backend, (r.status.value, r.error)))
    if names is not None:
        tallies = {n: tallies[n] for n in names if n in tallies}
    return _failure_line(tallies, floor)


def _failure_line(tallies: Mapping[str, Tally], floor: float | None) -> str | None:
    """``judging_failure``'s line from each judge's tally: the judge as a whole, then, when
    that passes and two backends decided its results, each backend's part."""
    floor = coverage_floor() if floor is None else floor
    failed = []
    for name, tally in tallies.items():
        parts = [(name, tally)]
        backends = sorted({b for b, _ in tally})
        if len(backends) > 1:
            parts += [(f"{name} ({b} part)", [t for t in tally if t[0] == b]) for b in backends]
        for label, part in parts:
            failures = [f for _, f in part if f is not None]
            line = coverage_problem(label, len(part) - len(failures), len(part), failures, floor)
            if line is not None:
                failed.append(line)
                break
    if not failed:
        return None
    return " ".join(("judging failed: " + "; ".join(failed)).split())


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
    if first is not None and len(first) > FIRST_ERROR_CHARS:  # every judge named, however long
        first = first[: FIRST_ERROR_CHARS - 3].rsplit(" ", 1)[0] + "..."
    return line + f"; {status} x{n}" + (f": {first}" if first else "")


def decided(r: JudgeResult) -> bool:
    """A score, or the judge's own finding that there is nothing to score (``no_claims``)."""
    return is_decided(r.score, r.status)


def is_decided(score: float | None, status: JudgeStatus) -> bool:
    """``decided`` from a result's score and status."""
    return score is not None or status == JudgeStatus.no_claims
