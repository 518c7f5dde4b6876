"""When a stage of a run failed as a whole: every LLM call of it failed (endpoint unreachable,
wrong key, unknown model), so its rows say nothing about the pipeline.

A stage failed when it made at least one call and none succeeded. Rows that made no call are
left out of the count, so an unanswerable question (``skipped_missing_reference``) or an item
refused before judging (``invalid_input``) never hides a failed stage:

- reranking: an LLM reranker whose ``failed_calls`` equals its ``calls`` (> 0);
- generation: every answer generated in this process carries an ``error``;
- judging, per judge: every result that made a call ended in ``CALL_FAILURES``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragjudge.errors import RagjudgeError
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
    """Every LLM call of a stage failed; the message names the stage and the first error."""


def judging_failure(results: Mapping[str, Sequence[JudgeResult]]) -> str | None:
    """The message for the judges whose every call failed (None when each judge that made a
    call scored at least once)."""
    failed = []
    for name, rs in results.items():
        called = [r for r in rs if r.status not in NO_CALL]
        if called and all(r.status in CALL_FAILURES for r in called):
            first = next((r.error for r in called if r.error), None) or called[0].status.value
            failed.append(f"{name} ({len(called)} calls; first error: {first})")
    if not failed:
        return None
    return "judging failed: every call of " + "; ".join(failed) + " failed, so nothing was scored"


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
