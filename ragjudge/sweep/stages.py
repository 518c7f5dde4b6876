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

from collections.abc import Iterable
from typing import Any

from ragjudge.judges.coverage import (
    CALL_FAILURES,
    DEFAULT_COVERAGE_FLOOR,
    NO_CALL,
    StageFailedError,
    coverage_floor,
    coverage_problem,
    judging_failure,
    stored_judging_failure,
)
from ragjudge.schema import Answer

__all__ = [
    "CALL_FAILURES",
    "DEFAULT_COVERAGE_FLOOR",
    "NO_CALL",
    "StageFailedError",
    "coverage_floor",
    "coverage_problem",
    "generation_failure",
    "judging_failure",
    "reranking_failure",
    "stored_judging_failure",
]


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
