"""The pytest plugin (entry point ``pytest11``) run by pytester: a gate on the interval's lower
bound passes, one below it fails with the worst rows in the message, and the session ends
with a quality-gate summary."""

from __future__ import annotations

import pytest

import ragjudge
from ragjudge.testing import QualityGateError, assert_quality

pytest_plugins = ["pytester"]

SUITE = """
import ragjudge

ROWS = [
    {"id": f"r{i}", "question": f"Question {i}?", "answer": answer, "contexts": ["ctx"]}
    for i, answer in enumerate(
        ["Short answer."] * 8 + ["A rambling answer " + "that goes on " * 10, "Fine."]
    )
]


@ragjudge.judge(name="concise", needs=("answer",))
def concise(answer):
    n = len(answer.split())
    return (1.0 if n <= 5 else 0.0), f"{n} words"


def test_gate_passes(quality_gate):
    result = ragjudge.evaluate(ROWS, judges=[concise])
    quality_gate(result, judge="concise", min=0.6)


def test_gate_fails(quality_gate):
    result = ragjudge.evaluate(ROWS, judges=[concise])
    quality_gate(result, judge="concise", min=0.85)  # mean 0.9 is above, its interval is not
"""


def test_plugin_gate_passes_and_fails_with_worst_rows(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "quality gate concise >= 0.85 failed" in out
    assert "lower bound 0.7" in out  # the 95% interval of 9/10 reaches below 0.85
    assert "r8 [0.000, ok] Question 8?" in out and "33 words" in out  # the worst row, why
    assert "ragjudge quality gates" in out
    assert "passed test_suite.py::test_gate_passes: concise >= 0.6 (mean 0.900" in out
    assert "FAILED test_suite.py::test_gate_fails: concise >= 0.85" in out


class _Result:
    """The shape ``assert_quality`` reads, for the coverage rule."""

    def __init__(self, agg):
        self.aggregates = {"j": agg}

    def worst(self, judge, n):
        return []


def test_unscored_rows_fail_the_gate_even_with_a_high_mean() -> None:
    from ragjudge.schema import Aggregate

    agg = Aggregate(
        mean=0.95,
        ci_low=0.9,
        ci_high=1.0,
        n_scored=8,
        n_total=10,
        status_counts={"ok": 8, "timeout": 2},
    )
    with pytest.raises(QualityGateError, match=r"coverage 8/10 is below 100%"):
        assert_quality(_Result(agg), judge="j", min=0.5)
    assert_quality(_Result(agg), judge="j", min=0.5, min_coverage=0.8)
    with pytest.raises(QualityGateError, match="no judge 'x'"):
        assert_quality(_Result(agg), judge="x", min=0.5)


@ragjudge.judge(name="perfect", needs=("answer",))
def _perfect(answer: str) -> tuple[float, str]:
    return 1.0, "always"


def test_one_scored_row_passes_no_gate_and_thresholds_are_fractions() -> None:
    """A single perfect row gave the zero-width "interval" [1, 1] and passed any ``min``; a
    ``min`` above 1 (or a coverage of 80 meaning 80 %) made a gate that can never pass."""
    one = ragjudge.evaluate(
        [{"id": "r", "question": "q?", "answer": "a", "contexts": ["c"]}], judges=[_perfect]
    )
    with pytest.raises(QualityGateError, match="one scored row shows no interval"):
        assert_quality(one, judge="perfect", min=0.5)
    two = ragjudge.evaluate(
        [{"id": f"r{i}", "question": "q?", "answer": "a", "contexts": ["c"]} for i in range(2)],
        judges=[_perfect],
    )
    assert_quality(two, judge="perfect", min=0.5)
    for bad in ({"min": 1.5}, {"min": float("nan")}, {"min": 0.5, "min_coverage": 80}):
        with pytest.raises(ValueError, match=r"is not in \[0, 1\]"):
            assert_quality(two, judge="perfect", **bad)  # type: ignore[arg-type]


USER_SUITE = """
import ragjudge
from ragjudge.testing import assert_quality

# eight answerable questions and two unanswerable ones (no reference answer)
ROWS = [
    {"id": f"r{i}", "question": f"Question {i}?", "answer": "Rome." if i in (6, 7) else "Paris.",
     "contexts": ["ctx"],
     "reference": "Paris." if i < 8 else None}
    for i in range(10)
]


@ragjudge.judge(name="exact", needs=("answer", "reference"))
def exact(answer, reference):
    return float(answer == reference), "compared"


@ragjudge.judge(name="flaky", needs=("answer",))
def flaky(answer):
    return 1.0, "fine"


def test_unanswerable_questions_are_not_missing(quality_gate):
    result = ragjudge.evaluate(ROWS, judges=[exact])
    quality_gate(result, judge="exact", min=0.3)


def test_coverage_fails_not_the_score(quality_gate):
    rows = [dict(r, answer="" if i >= 8 else "Paris.") for i, r in enumerate(ROWS)]
    result = ragjudge.evaluate(rows, judges=[flaky])
    quality_gate(result, judge="flaky", min=0.5)  # USER LINE GATE


def test_direct_call(ragjudge_home):
    result = ragjudge.evaluate(ROWS, judges=[exact])
    assert_quality(result, judge="exact", min=0.99)  # USER LINE DIRECT
"""


def test_a_user_suite_reads_its_own_lines_and_what_failed(pytester: pytest.Pytester) -> None:
    """What a user's run shows (issue #30, 13): a failed gate points at the user's line, not at
    the source of ``assert_quality``; the summary says it was the coverage that failed; the
    unanswerable questions of a reference judge are not applicable (not missing) under the
    default ``min_coverage``; and no pytest-asyncio deprecation warning (the user's project has
    no pytest configuration at all)."""
    pytester.makepyfile(test_user=USER_SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1, failed=2)
    assert "> " in out and "USER LINE GATE" in out and "USER LINE DIRECT" in out
    for internal in ("def assert_quality", "raise QualityGateError", "def gate(", "raise\n"):
        assert internal not in out, internal
    summary = out[out.index("ragjudge quality gates") :]
    assert "passed test_user.py::test_unanswerable_questions_are_not_missing" in summary
    assert "8/8 scored, 2 not applicable" in summary
    gate_line = next(x for x in summary.splitlines() if "test_coverage_fails_not_the_score" in x)
    assert gate_line.startswith("FAILED") and "coverage 8/10" in gate_line, gate_line
    assert "is unset" not in out
    assert "PytestDeprecationWarning" not in out
