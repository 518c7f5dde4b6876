"""``ragjudge judge`` / ``ragjudge generate``: bad input is one clear message with exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragjudge.errors import ConfigError, DataError
from ragjudge.judges.items import read_items
from ragjudge.judges.registry import create_judge

GOOD = {"question": "Q?", "answer": "A.", "contexts": ["c1", "c2"], "reference": "R."}


def write(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"question": "Q?", "contexts": ["c"]}, "row has no 'answer'"),
        ({"question": "Q?", "answer": "A."}, "row has no 'contexts'"),
        ({"question": "Q?", "answer": "A.", "contexts": []}, "'contexts' is empty"),
        ({"question": "Q?", "answer": "A.", "contexts": "c1"}, "must be a list of strings"),
        ({"question": "Q?", "answer": 3, "contexts": ["c"]}, "'answer' must be a string"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, row: dict[str, object], message: str) -> None:
    path = write(tmp_path / "in.jsonl", [GOOD, row])
    with pytest.raises(DataError, match=message) as err:
        read_items(path)
    assert err.value.line == 2 and str(path) in str(err.value)


def test_rows_keep_ids_and_default_them(tmp_path: Path) -> None:
    path = write(tmp_path / "in.jsonl", [dict(GOOD, id="a"), dict(GOOD, reference="  ")])
    rows, items = read_items(path)
    assert [i.id for i in items] == ["a", "row-2"]
    assert items[1].reference is None and rows[0]["id"] == "a"
    with pytest.raises(DataError, match="repeats the row on line 1"):
        read_items(write(tmp_path / "dup.jsonl", [dict(GOOD, id="a"), dict(GOOD, id="a")]))


def test_unknown_judge_lists_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"known judges: .*context_precision.*faithfulness"):
        create_judge("faithfulnes", "llm")
    with pytest.raises(ConfigError, match=r"has no 'nope' backend; it has: .*llm"):
        create_judge("faithfulness", "nope")


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragjudge", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_cli_errors_are_one_message_and_exit_2(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.jsonl", [GOOD, {"question": "Q?", "answer": "A."}])
    res = run_cli("judge", "--input", str(bad), "--backend", "llm")
    assert res.returncode == 2, res.stderr
    assert f"{bad}:2: row has no 'contexts'" in " ".join(res.stderr.split())
    assert "Traceback" not in res.stderr
    good = write(tmp_path / "good.jsonl", [GOOD])
    res = run_cli(
        "judge", "--input", str(good), "--judges", "faithfulness,bogus", "--backend", "llm"
    )
    assert res.returncode == 2 and "unknown judge 'bogus'" in res.stderr
    assert "Traceback" not in res.stderr
