"""The ragjudge pytest plugin (entry point ``pytest11``: active wherever ragjudge is
installed).

- ``quality_gate`` fixture: ``quality_gate(result, judge=..., min=...)`` is
  ``ragjudge.testing.assert_quality`` (fails on the interval's lower bound, prints the worst
  rows) and records each gate, passed or failed, for the summary.
- ``ragjudge_home`` fixture: a fresh ``RAGJUDGE_HOME`` for the test (run store, caches), so a
  test's sweeps and evaluations never mix with the user's own state.
- A "ragjudge quality gates" section at the end of the terminal report: one line per gate
  with the judge, the threshold, the mean and interval, the coverage and, for a failed gate,
  which rule failed (the interval's lower bound, the coverage).
- A failed gate's traceback ends on the test's line (``__tracebackhide__``).
- pytest-asyncio (when installed) warns in every session of a project that leaves its
  ``asyncio_default_fixture_loop_scope`` option unset, async tests or not: that one warning is
  not shown; a project that sets the option sees nothing changed.

Importing this module imports nothing of ragjudge: pytest loads it in every session.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

_GATES = pytest.StashKey[list[str]]()


_ASYNCIO_SCOPE = "asyncio_default_fixture_loop_scope"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Runs before pytest-asyncio's ``pytest_configure`` (which issues the warning)."""
    config.stash[_GATES] = []
    if config.pluginmanager.hasplugin("asyncio") and not config.getini(_ASYNCIO_SCOPE):
        warnings.filterwarnings(
            "ignore",
            message=f'The configuration option "{_ASYNCIO_SCOPE}" is unset',
            category=pytest.PytestDeprecationWarning,
        )


@pytest.fixture
def quality_gate(request: pytest.FixtureRequest) -> Callable[..., None]:
    """``gate(result, *, judge, min, min_coverage=1.0, worst=3)``: see the module docstring."""
    lines = request.config.stash[_GATES]

    def gate(result: Any, *, judge: str, min: float, **options: Any) -> None:
        __tracebackhide__ = True  # a failure points at the test's line
        from ragjudge.testing.quality import QualityGateError, assert_quality, scored_text

        agg = result.aggregates.get(judge)
        where = f"{request.node.nodeid}: {judge} >= {min:g}"
        if agg is not None:
            mean = "no mean" if agg.mean is None else f"mean {agg.mean:.3f}"
            if agg.ci_low is not None and agg.ci_high is not None:
                mean += f" [{agg.ci_low:.3f}, {agg.ci_high:.3f}]"
            where += f" ({mean}, {scored_text(agg)})"
        try:
            assert_quality(result, judge=judge, min=min, **options)
        except QualityGateError as exc:
            lines.append(f"FAILED {where}: {'; '.join(exc.problems)}")
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
