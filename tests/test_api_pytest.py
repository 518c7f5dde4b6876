"""The pytest plugin (entry point ``pytest11``) run by pytester: a gate on the interval's lower
bound passes, one below it fails with the worst rows in the message, and the session ends
with a quality-gate summary."""

from __future__ import annotations

import pytest

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
