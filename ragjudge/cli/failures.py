"""What the commands that judge (``judge``, ``sweep``) say about results that were not scored:
the distinct errors, and a judge below its coverage floor as exit code 2."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ragjudge.schema import JudgeResult


def failure_lines(results: Mapping[str, Sequence[JudgeResult]], limit: int = 3) -> list[str]:
    """One line per (judge, status, distinct error message) of the unscored results, most
    frequent first, at most ``limit`` messages per judge; skips carry no error and are left out."""
    lines: list[str] = []
    for name, rs in results.items():
        counts = Counter((r.status.value, r.error) for r in rs if r.error and r.score is None)
        for (status, error), n in counts.most_common(limit):
            lines.append(f"{name}: {status} x{n}: {error}")
    return lines


def check_endpoint_used(results: Mapping[str, Sequence[JudgeResult]]) -> None:
    """Raise ``StageFailedError`` (exit code 2) when a judge's coverage is below the floor,
    as it always is when every call failed (``ragjudge.sweep.stages.judging_failure``: results
    decided without a call, such as ``skipped_missing_reference``, do not hide it)."""
    from ragjudge.sweep.stages import StageFailedError, judging_failure

    failure = judging_failure(results)
    if failure is not None:
        raise StageFailedError(failure)
