"""Environment errors are one line naming the file, exit 2, not internal errors (issue 30 §8):
a plan file that is not UTF-8, a disk that fills up while ``--out`` is written (``/dev/full``,
and a full tmpfs where this process can mount one)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragjudge.cli import main
from ragjudge.store import open_store
from tests.test_cache_damage import mount_tmpfs
from tests.test_report_cli import _write_run


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    cap = capsys.readouterr()
    return int(exc.value.code or 0), (cap.out + cap.err).strip()


def test_a_plan_that_is_not_utf8_is_one_line_naming_the_file(tmp_path, capsys):
    plan = tmp_path / "plan.jsonl"
    plan.write_bytes(b'{"messages": [{"role": "user", "content": "caf\xc3\xa9"}]}\n\xff\xfe\n')
    code, text = run_cli(["llm", "dry-run", str(plan), "--model", "gpt-4o-mini"], capsys)
    assert code == 2 and len(text.splitlines()) == 1, text
    assert f"{plan}:2" in text and "UTF-8" in text and "internal error" not in text


@pytest.fixture
def one_run() -> str:
    with open_store() as store:
        _write_run(store, "r1", started="2026-12-01T02:30:00+00:00", faith=[0.5] * 40,
                   ndcg=[0.5] * 40)  # fmt: skip
    return "r1"


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_a_full_disk_under_out_is_one_line_naming_it(one_run, fmt, capsys):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    code, text = run_cli(["runs", "export", one_run, "--format", fmt, "--out", "/dev/full"], capsys)
    assert code == 2 and len(text.splitlines()) == 1, text
    assert "/dev/full" in text and "no space left" in text.lower(), text
    assert "internal error" not in text


@pytest.fixture
def full_folder(tmp_path) -> Iterator[Path]:
    """A tmpfs of 16 KiB, filled (skipped where this process cannot mount)."""
    where = tmp_path / "tiny"
    where.mkdir()
    mount_tmpfs(where, "size=16k")
    try:
        with (where / "filler").open("wb", buffering=0) as fh, pytest.raises(OSError):
            while True:
                fh.write(os.urandom(4096))
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


def test_a_report_into_a_full_disk_is_one_line_naming_out(one_run, full_folder, capsys):
    with open_store() as store:
        _write_run(store, "r2", started="2026-12-02T02:30:00+00:00", faith=[0.6] * 40,
                   ndcg=[0.5] * 40)  # fmt: skip
    out = full_folder / "report"
    code, text = run_cli(["report", "--run", "r2", "--baseline", "r1", "--out", str(out)], capsys)
    assert code == 2, text
    last = text.splitlines()[-1]
    assert str(out) in last and "no space left" in last.lower() and "internal" not in last, text
