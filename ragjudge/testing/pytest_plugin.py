"""The ragjudge pytest plugin (entry point ``pytest11``: active wherever ragjudge is
installed).

- ``quality_gate`` fixture: ``quality_gate(result, judge=..., min=...)`` is
  ``ragjudge.testing.assert_quality`` (fails on the interval's lower bound, prints the worst
  rows) and records each gate, passed or failed, for the summary.
- ``ragjudge_home`` fixture: a fresh ``RAGJUDGE_HOME`` for the test (run store, caches), so a
  test's sweeps and evaluations never mix with the user's own state.
- A "ragjudge quality gates" section at the end of the terminal report: one line per gate
  with the judge, the threshold, the mean and interval, and the coverage.

Importing this module imports nothing of ragjudge: pytest loads it in every session.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

_GATES = pytest.StashKey[list[str]]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_GATES] = []


@pytest.fixture
def quality_gate(request: pytest.FixtureRequest) -> Callable[..., None]:
    """``gate(result, *, judge, min, min_coverage=1.0, worst=3)``: see the module docstring."""
    lines = request.config.stash[_GATES]

    def gate(result: Any, *, judge: str, min: float, **options: Any) -> None:
        from ragjudge.testing.quality import QualityGateError, assert_quality

        agg = result.aggregates.get(judge)
        where = f"{request.node.nodeid}: {judge} >= {min:g}"
        if agg is not None and agg.mean is not None:
            where += f" (mean {agg.mean:.3f} [{agg.ci_low:.3f}, {agg.ci_high:.3f}], "
            where += f"{agg.n_scored}/{agg.n_total} scored)"
        try:
            assert_quality(result, judge=judge, min=min, **options)
        except QualityGateError:
            lines.append(f"FAILED {where}")
            raise
        lines.append(f"passed {where}")

    return gate


@pytest.fixture
def ragjudge_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``RAGJUDGE_HOME`` for this test."""
    home = tmp_path / "ragjudge-home"
    home.mkdir()
    monkeypatch.setenv("RAGJUDGE_HOME", str(home))
    return home


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    lines = config.stash.get(_GATES, [])
    if lines:
        terminalreporter.section("ragjudge quality gates")
        for line in lines:
            terminalreporter.write_line(line)
