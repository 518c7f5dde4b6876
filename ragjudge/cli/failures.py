"""What the commands that judge (``judge``, ``sweep``) say about results that were not scored:
the distinct errors, and a misconfiguration (every call failed) as exit code 2."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ragjudge.errors import ConfigError
from ragjudge.schema import JudgeResult, JudgeStatus

CALL_FAILURES = frozenset(
    {JudgeStatus.provider_error, JudgeStatus.timeout, JudgeStatus.rate_limited}
)
"""Statuses that mean the endpoint could not be used, not that the judge could not decide."""


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
    """Raise ``ConfigError`` (exit code 2) when every result failed to reach the endpoint
    (provider_error / timeout / rate_limited): a misconfigured run, not a low score."""
    flat = [r for rs in results.values() for r in rs]
    if flat and all(r.status in CALL_FAILURES for r in flat):
        raise ConfigError(
            f"every judge call failed ({len(flat)} results), so nothing was scored; "
            f"the first error: {flat[0].error or flat[0].status.value}"
        )
