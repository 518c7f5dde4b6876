"""One exit-code contract for every command: 0 success, 1 regressed (report only), 2 bad input
or error, 3 budget stop; never a traceback.

Every command of the typer app is found by walking it (a new command cannot be forgotten) and
run in-process through the real entry point ``ragjudge.cli.main`` with broken inputs: a
corrupt run store and LLM cache in RAGJUDGE_HOME, and a garbage file for each required
parameter (or the command's own broken case below)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import typer

from ragjudge.cli import app, main

GARBAGE = b'\x00\x01garbage, not what this file should hold {"unclosed\n' * 40


def commands() -> list[tuple[str, ...]]:
    """Every leaf command of the app, as its words (``("runs", "list")``)."""
    found: list[tuple[str, ...]] = []

    def walk(cmd: object, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs is None:
            found.append(path)
            return
        for name, sub in subs.items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def required_params(path: tuple[str, ...]) -> list[tuple[str, str]]:
    cmd = typer.main.get_command(app)
    for word in path:
        cmd = cmd.commands[word]  # type: ignore[attr-defined]
    out = []
    for p in cmd.params:
        if p.required:
            flag = next((o for o in p.opts if o.startswith("--")), p.opts[0])
            out.append((p.param_type_name, flag))
    return out


@pytest.fixture
def broken(tmp_path: Path, _isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A home whose state files are garbage, and garbage input files."""
    (_isolated_home / "runs.sqlite").write_bytes(GARBAGE)
    (_isolated_home / "cache.sqlite").write_bytes(GARBAGE)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(GARBAGE)
    sheet = tmp_path / "labels.csv"
    sheet.write_text('id,dimension,label\nq1@k1,"faithfulness,1\nq2@k1,faithfulness,0\n')
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text("dataset: {path: .}\nks: [1, 2]\nks: [3]\n")
    monkeypatch.chdir(tmp_path)
    for name in ("RAGJUDGE_BASE_URL", "RAGJUDGE_API_KEY", "RAGJUDGE_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    return {"bad": str(bad), "sheet": str(sheet), "cfg": str(cfg), "out": str(tmp_path / "o")}


def own_cases(b: dict) -> dict[tuple[str, ...], list[list[str]]]:
    """Broken cases a command needs beyond 'garbage for every required parameter'."""
    return {
        ("sweep",): [["--config", b["cfg"]], ["--resume", "latest"], []],
        ("demo",): [["--out", b["out"], "--cases", "2"]],
        ("report",): [["--run", "latest"]],
        ("agree",): [["--labels", b["sheet"], "--results", b["bad"]]],
        ("spot-check",): [["--run", "latest"], []],
        ("fit-judges",): [["--labels", b["sheet"], "--out", b["out"]]],
        ("fake-llm",): [["--host", "256.1.1.1", "--port", "0"]],
        ("llm", "check"): [[]],  # with OPENAI_BASE_URL on a closed port (below)
        ("runs", "tag"): [["latest", "baseline"]],
    }


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    cap = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 0 if code is None else 2), cap.out + cap.err


def test_every_command_exits_2_on_broken_input_without_traceback(broken, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("RAGJUDGE_MAX_ATTEMPTS", "1")
    cases = own_cases(broken)
    seen = commands()
    assert ("runs", "list") in seen and ("llm", "cache") in seen and len(seen) >= 20
    failures = []
    for path in seen:
        argvs = cases.get(path)
        if argvs is None:  # garbage for every required parameter
            argv: list[str] = []
            for kind, flag in required_params(path):
                argv += [broken["bad"]] if kind == "argument" else [flag, broken["bad"]]
            argvs = [argv]
        for argv in argvs:
            code, text = run_cli([*path, *argv], capsys)
            last = text.strip().splitlines()[-1] if text.strip() else ""
            if code != 2 or "Traceback" in text or not last.lower().startswith("error:"):
                failures.append(f"{' '.join(path)} {argv}: exit {code}: {text[-300:]}")
    assert not failures, "\n".join(failures)


def test_every_command_refuses_an_unknown_option_with_exit_2(capsys):
    for path in commands():
        code, text = run_cli([*path, "--no-such-option"], capsys)
        assert code == 2 and "No such option: --no-such-option" in text, (path, text)
        assert "Traceback" not in text and "internal error" not in text
        assert len(text.strip().splitlines()) == 1, text
    code, text = run_cli(["testset", "--corpus", "c", "--max-cost", "nan"], capsys)
    assert code == 2 and text.strip() == (
        "error: ragjudge testset: Invalid value for '--max-cost': Input should be greater than "
        "or equal to 0 (see ragjudge testset --help)"
    )


def test_every_help_prints_its_text_as_written(capsys, monkeypatch):
    """``--help`` exits 0 and shows each help text's own brackets and code spans as text: rich
    markup read "ragjudge[ray]" as a style tag and printed "(ragjudge)"."""
    monkeypatch.setenv("COLUMNS", "200")
    root = typer.main.get_command(app)
    for path in commands():
        cmd = root
        for word in path:
            cmd = cmd.commands[word]  # type: ignore[attr-defined]
        code, text = run_cli([*path, "--help"], capsys)
        assert code == 0 and "Usage:" in text, (path, text)
        assert "``" not in text, (path, text)
        flat = " ".join(text.replace("│", " ").split())
        for p in cmd.params:
            for extra in re.findall(r"\w+\[\w+\]", getattr(p, "help", None) or ""):
                assert extra in flat, (path, extra)
    code, text = run_cli(["judge", "--help"], capsys)
    assert "(ragjudge[ray])" in " ".join(text.replace("│", " ").split())


def test_corrupt_state_files_are_named(broken, capsys, _isolated_home):
    code, text = run_cli(["runs", "list"], capsys)
    assert code == 2 and f"{_isolated_home / 'runs.sqlite'}: not a readable SQLite" in text
    code, text = run_cli(["llm", "cache"], capsys)
    assert code == 2 and f"{_isolated_home / 'cache.sqlite'}: not a readable SQLite" in text
    assert "corrupt or truncated" in text and len(text.strip().splitlines()) == 1


def test_unexpected_exception_is_one_line_and_debug_shows_the_traceback(capsys, monkeypatch):
    from ragjudge.store.sql import SqlRunStore

    def boom(self: SqlRunStore) -> list:
        raise RuntimeError("the disk said no")

    monkeypatch.setattr(SqlRunStore, "list_runs", boom)
    code, text = run_cli(["runs", "list"], capsys)
    assert code == 2 and "Traceback" not in text
    line = " ".join(text.split())
    assert "internal error RuntimeError: the disk said no (at " in line
    assert "test_exit_codes.py" in line and "RAGJUDGE_DEBUG=1" in line
    monkeypatch.setenv("RAGJUDGE_DEBUG", "1")
    with pytest.raises(RuntimeError, match="the disk said no"):
        main(["runs", "list"])


def test_read_only_home_still_lists_runs_and_names_the_path_on_write(tmp_path, capsys, monkeypatch):
    """A read-only RAGJUDGE_HOME: reading commands work; a write is one line naming the file.
    (As root, where chmod does not stop writes, the permission check is what is denied.)"""
    from ragjudge.store import open_store

    home = tmp_path / "ro-home"
    monkeypatch.setenv("RAGJUDGE_HOME", str(home))
    from ragjudge.llm.cache import LLMCache

    open_store().close()  # a store and a cache with their schema; then the folder is read-only
    LLMCache().close()
    home.chmod(0o555)
    if os.geteuid() == 0:
        real = os.access

        def access(path: object, mode: int, *a: object, **kw: object) -> bool:
            if mode & os.W_OK and str(path).startswith(str(home)):
                return False
            return real(path, mode, *a, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "access", access)
    try:
        code, text = run_cli(["runs", "list"], capsys)
        assert code == 0, text
        code, text = run_cli(["llm", "cache"], capsys)
        assert code == 0 and "cache.sqlite" in text, text
        assert LLMCache().read_only
        code, text = run_cli(["runs", "tag", "latest", "x"], capsys)
        assert code == 2 and "has no runs yet" in text
        store = open_store()
        assert store.read_only
        from ragjudge.errors import StateFileError

        with pytest.raises(StateFileError, match=r"runs\.sqlite: cannot write .*read-only"):
            store.delete_run("nope")
    finally:
        home.chmod(0o755)
