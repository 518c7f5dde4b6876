"""A server that echoes what it is sent (headers and messages) gets the API key and the HTTP
Basic credentials of the base URL: neither, nor their base64, may reach any file under the
home (run store, cache, learned modes), an export, the judge output or what is printed."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from ragjudge.resources import demo_dir
from ragjudge.testing.server import FakeLLMServer

KEY = "sk-canary-key-5e3f9a1c"
USER = "canaryuser"


def _ragjudge(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragjudge", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
    )


@pytest.mark.parametrize("password", ["canary-pw-77d1", "canary%21pw-77d1"])
def test_an_echoing_server_leaks_no_secret_anywhere(tmp_path: Path, password: str) -> None:
    """Also with a password percent-encoded in the URL, which HTTP Basic sends decoded (the
    decoded pair's base64 reached the run store and exports)."""
    home = tmp_path / "home"
    with FakeLLMServer(echo=True) as srv:
        url = f"http://{USER}:{password}@127.0.0.1:{srv.port}/v1"
        env = dict(
            os.environ,
            OPENAI_BASE_URL=url,
            OPENAI_API_KEY=KEY,
            RAGJUDGE_MODEL="m",
            RAGJUDGE_HOME=str(home),
            RAGJUDGE_MAX_ATTEMPTS="2",
            RAGJUDGE_BACKOFF="0.01",
        )
        cfg = tmp_path / "sweep.yaml"
        cfg.write_text(
            f"dataset: {{path: {demo_dir()}, split: test, sample: 2}}\n"
            "retriever: {kind: bm25}\ngenerator: {kind: extractive}\n"
            "judges: {names: [faithfulness], backend: llm}\nks: [1]\n"
        )
        outs = [
            _ragjudge(["sweep", "--config", str(cfg), "--out", str(tmp_path / "o")], env, tmp_path)
        ]
        rows = tmp_path / "rows.jsonl"
        rows.write_text(
            json.dumps({"id": "a", "question": "Q?", "answer": "A lamp.", "contexts": ["c"]}) + "\n"
        )
        outs.append(
            _ragjudge(
                [
                    "judge",
                    str(rows),
                    "--judges",
                    "faithfulness",
                    "--output",
                    str(tmp_path / "j.jsonl"),
                ],
                env,
                tmp_path,
            )
        )
        outs.append(
            _ragjudge(
                ["runs", "export", "latest", "-f", "jsonl", "-o", str(tmp_path / "x.jsonl")],
                env,
                tmp_path,
            )
        )
        echoed = [r["body"]["messages"] for r in srv.chat_requests()]
    assert echoed, "the server was asked"
    assert outs[0].returncode == 2 and outs[1].returncode == 2, [o.stderr for o in outs]
    assert outs[2].returncode == 0, outs[2].stderr
    secrets = [KEY]
    for pw in {password, unquote(password)}:
        userinfo = f"{USER}:{pw}"
        secrets += [pw, userinfo, base64.b64encode(userinfo.encode()).decode()]
    texts = {f"output of {' '.join(o.args[3:5])}": o.stdout + o.stderr for o in outs}
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "runs.sqlite" for p in files) and (tmp_path / "x.jsonl").exists()
    texts.update({str(p): p.read_bytes().decode("latin-1") for p in files})
    # the raw echo was kept (redacted) with the parse errors: the test looks at real rows
    assert any("parse_error" in t and "***" in t for t in texts.values())
    leaks = [(where, s) for where, t in texts.items() for s in secrets if s in t]
    assert not leaks
