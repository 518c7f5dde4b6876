"""The Python API and ``ragjudge judge`` refuse what they cannot honour, before any work, in
one line: found by trying odd but plausible inputs (each failed on the old code)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

import ragjudge
from ragjudge.errors import ConfigError
from ragjudge.testing import assert_quality
from ragjudge.testing.server import FakeLLMServer

ROWS = [
    {
        "id": f"r{i}",
        "question": "Who built the mill?",
        "answer": "Thomas Aldane built the mill.",
        "contexts": ["The mill was built by Thomas Aldane in 1811."],
        "reference": "Thomas Aldane",
    }
    for i in range(3)
]


@pytest.mark.parametrize("floor", [1.5, -1.0, math.nan])
def test_a_coverage_floor_outside_0_1_is_refused_before_any_call(
    llm_env: FakeLLMServer, floor: float
) -> None:
    """``min_coverage=1.5`` sent every call, then failed a judge that scored 3/3."""
    with pytest.raises(ConfigError, match="is not a share between 0 and 1"):
        ragjudge.evaluate(ROWS, judges=["faithfulness"], backend="llm", min_coverage=floor)
    assert llm_env.stats()["chat_requests"] == 0


def test_a_judge_named_like_a_row_field_is_refused() -> None:
    """Its scores overwrote the rows' own column in ``to_pandas()``: the reference was gone."""

    @ragjudge.judge(name="reference", needs=("answer",))
    def _reference(answer: str) -> float:
        return 0.25

    with pytest.raises(ConfigError, match="judge name 'reference' is also a field of the rows"):
        ragjudge.evaluate(ROWS, judges=[_reference], backend="offline")


def test_one_name_or_need_given_as_a_string_is_one_not_its_letters() -> None:
    """``judges="context_precision"`` was read letter by letter ("unknown judge 'c'"), and so
    was ``needs="answer"``."""

    @ragjudge.judge(name="has_answer", needs="answer")
    def _has_answer(answer: str) -> float:
        return float(bool(answer))

    res = ragjudge.evaluate(ROWS, judges="context_precision", backend="offline")
    assert list(res.aggregates) == ["context_precision"]
    res = ragjudge.evaluate(ROWS, judges=[_has_answer], backend="offline")
    assert res.aggregates["has_answer"].mean == 1.0
    criteria = ragjudge.CriteriaJudge("sourced", "Does it cite a source?", needs="contexts")
    assert criteria.name == "sourced"


def test_nonsense_arguments_are_named() -> None:
    with pytest.raises(ConfigError, match="concurrency=0"):
        ragjudge.evaluate(ROWS, judges=["context_precision"], backend="offline", concurrency=0)
    res = ragjudge.evaluate(ROWS, judges=["context_precision"], backend="offline")
    with pytest.raises(ConfigError, match="no judge 'nope' in the result; it has: context_"):
        res.worst("nope")
    with pytest.raises(TypeError, match=r"expected the result of ragjudge.evaluate .* got dict"):
        assert_quality({"context_precision": 0.9}, judge="context_precision", min=0.5)


def _judge_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(__import__("json").dumps(r) + "\n" for r in ROWS))
    cmd = [sys.executable, "-m", "ragjudge", "judge", "--input", str(src), "--no-progress"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_judge_output_that_is_not_jsonl_is_refused(tmp_path: Path) -> None:
    """``-o out.parquet`` wrote JSON Lines text into a file pandas then could not read."""
    res = _judge_cli(tmp_path, "--backend", "offline", "--judges", "context_precision", "-o",
                     str(tmp_path / "out.parquet"))  # fmt: skip
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert "out.parquet: the rows are written as JSON Lines" in lines[0]
    assert not (tmp_path / "out.parquet").exists()


def test_a_plugin_that_does_not_compile_is_named_not_an_internal_error(tmp_path: Path) -> None:
    (tmp_path / "synplug.py").write_text("x = 1\ny = (\n")
    res = _judge_cli(tmp_path, "--plugin", "synplug", "--backend", "offline")
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert "cannot import plugin 'synplug': SyntaxError at" in lines[0], lines[0]
    assert "synplug.py:2" in lines[0] and "internal error" not in lines[0], lines[0]
