"""``ragjudge fake-llm`` serves until stopped; ``ragjudge llm check | dry-run | ledger``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragjudge.llm import Ledger, LedgerEntry

RAGJUDGE = [sys.executable, "-m", "ragjudge"]
pytestmark = pytest.mark.filterwarnings(
    "error::ResourceWarning", "error::pytest.PytestUnraisableExceptionWarning"
)  # every pipe, file and process of these tests is closed


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        RAGJUDGE + args, capture_output=True, text=True, timeout=60, env=env or dict(os.environ)
    )


def test_fake_llm_serves_until_stopped_and_llm_check_uses_it(tmp_path: Path) -> None:
    with subprocess.Popen(
        [
            *RAGJUDGE,
            "fake-llm",
            "--port",
            "0",
            "--like-llama-cpp",
            "--log",
            str(tmp_path / "log.jsonl"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            url = line.split(" on ", 1)[1].split()[0]
            assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
            env = dict(os.environ, OPENAI_BASE_URL=url, OPENAI_API_KEY="sk-cli-secret")
            env["RAGJUDGE_MODEL"] = "fake-model"
            out = run(["llm", "check"], env)
            assert out.returncode == 0, out.stderr
            assert "test call: ok" in out.stdout and "sk-cli-secret" not in out.stdout
            assert "api_key_set: True" in out.stdout
            # each structured mode probed with a judge schema; the 500 to json_schema is a refusal
            lines = {
                ln.split(":", 1)[0].strip(): ln.split(":", 1)[1].strip()
                for ln in out.stdout.splitlines()
                if ":" in ln
            }
            assert lines["mode json_schema"].startswith("refused") and "Traceback" not in out.stdout
            assert "Input should be 'text' or 'json_object'" in lines["mode json_schema"]
            assert lines["mode json_object"].startswith("ok")
            assert lines["mode tools"].startswith("ok") and lines["mode prompt"].startswith("ok")
            assert lines["auto uses"].startswith("json_object")
            assert proc.poll() is None  # still serving
        finally:
            proc.terminate()
            proc.wait(10)
    log = (tmp_path / "log.jsonl").read_text(encoding="utf-8").splitlines()
    templates = [json.loads(x).get("template") for x in log]
    assert "test/echo@v1" in templates
    assert templates.count("judges/answer_relevancy@v1") >= 5


def _fake_llm(*flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*RAGJUDGE, "fake-llm", "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _served_url(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().split(" on ", 1)[1].split()[0]


def test_llm_check_relearns_the_modes_and_fails_when_none_works(tmp_path: Path) -> None:
    """A probe replaces what earlier runs learned (a mode dropped then and working now is used
    again; it used to stay dropped for good), and no working mode is an error, exit 2 (it
    exited 0, naming json_schema as auto's choice)."""
    env = dict(os.environ, RAGJUDGE_HOME=str(tmp_path), OPENAI_API_KEY="sk-cli-secret")
    env["RAGJUDGE_MODEL"] = "fake-model"
    with _fake_llm() as proc:
        try:
            env["OPENAI_BASE_URL"] = url = _served_url(proc)
            dropped = {m: "an old refusal" for m in ("json_schema", "json_object", "tools")}
            record = {f"{url}|fake-model": {"mode": "prompt", "dropped": dropped}}
            (tmp_path / "llm_modes.json").write_text(json.dumps(record))
            out = run(["llm", "check"], env)
            assert out.returncode == 0, out.stderr
            assert "auto uses: json_schema" in " ".join(out.stdout.split())
            saved = json.loads((tmp_path / "llm_modes.json").read_text())
            assert saved[f"{url}|fake-model"]["dropped"] == {}
        finally:
            proc.terminate()
            proc.wait(10)
    with _fake_llm("--fault-rate", "malformed=1.0") as proc:
        try:
            env["OPENAI_BASE_URL"] = _served_url(proc)
            out = run(["llm", "check"], env)
            assert out.returncode == 2 and "Traceback" not in out.stderr
            (line,) = out.stderr.strip().splitlines()
            assert "no structured mode gave a usable reply" in line
        finally:
            proc.terminate()
            proc.wait(10)


def test_llm_check_without_endpoint() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RAGJUDGE_B"))}
    out = run(["llm", "check"], env)
    assert out.returncode == 0 and "offline" in out.stdout


def test_dry_run_and_bad_plan_line(tmp_path: Path) -> None:
    plan = tmp_path / "plan.jsonl"
    msgs = [{"role": "user", "content": "x" * 4000}]
    plan.write_text("\n".join(json.dumps({"messages": msgs}) for _ in range(3)) + "\n")
    out = run(["llm", "dry-run", str(plan), "--model", "gpt-4o-mini"])
    assert out.returncode == 0, out.stderr
    assert "calls 3, prompt tokens 3,018" in out.stdout and "$" in out.stdout
    plan.write_bytes(b"\xef\xbb\xbf" + plan.read_bytes())  # saved by a Windows editor
    out = run(["llm", "dry-run", str(plan), "--model", "gpt-4o-mini"])
    assert out.returncode == 0 and "calls 3, prompt tokens 3,018" in out.stdout, out.stderr
    plan.write_text(json.dumps({"messages": msgs}) + "\n{oops\n")
    bad = run(["llm", "dry-run", str(plan)])
    assert bad.returncode == 2 and f"{plan}:2" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("by", ["judge", "judge,k"])
def test_ledger_summary(tmp_path: Path, by: str) -> None:
    ledger = Ledger()
    for k in ("1", "2"):
        ledger.record(
            LedgerEntry(kind="call", call_id=k, tags={"judge": "faith", "k": k}, prompt_tokens=7)
        )
    ledger.to_jsonl(tmp_path / "l.jsonl")
    out = run(["llm", "ledger", str(tmp_path / "l.jsonl"), "--by", by])
    assert out.returncode == 0, out.stderr
    assert "faith" in out.stdout and ("14" in out.stdout if by == "judge" else "7" in out.stdout)
