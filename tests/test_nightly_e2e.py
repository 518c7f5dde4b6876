"""The nightly job end to end, as a team runs it: two real `ragjudge sweep` runs with LLM
generation and LLM judges over HTTP against the local test server, then `ragjudge report`.

Tonight's run uses another model whose endpoint answers malformed JSON to many requests, with
one attempt per call so retries cannot hide it: judges that cannot parse return typed
parse_error statuses, coverage falls while the mean of what was scored holds, and the report
must flag it and exit 1. The API key never reaches the store or
the report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragjudge.resources import demo_dir
from ragjudge.store import open_store
from ragjudge.testing.faults import FaultPlan
from tests.fixtures.llm import TEST_KEY

CONFIG = """\
dataset: {{path: {path}, split: test, limit: 24}}
retriever: {{kind: bm25}}
generator: {{kind: chat}}
judges:
  names: [faithfulness, answer_relevancy, context_recall]
  backend: llm
ks: [1, 3]
concurrency: 8
seed: 0
"""


def _cli(home: Path, env_extra: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAGJUDGE_HOME": str(home), **env_extra}
    return subprocess.run(
        [sys.executable, "-m", "ragjudge", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.slow
def test_nightly_sweeps_then_report_flags_a_coverage_drop(llm_env, tmp_path):
    home = tmp_path / "home"
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(CONFIG.format(path=demo_dir()))
    env = {
        k: os.environ[k]
        for k in (
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
            "RAGJUDGE_TIMEOUT",
            "RAGJUDGE_BACKOFF",
            "RAGJUDGE_BACKOFF_MAX",
        )
    }

    base = _cli(
        home,
        {**env, "RAGJUDGE_MODEL": "model-a"},
        "sweep",
        "--config",
        str(cfg),
        "--tag",
        "baseline",
        "--out",
        str(tmp_path / "s1"),
    )
    assert base.returncode == 0, base.stderr[-3000:]

    llm_env.set_faults(FaultPlan(rates={"malformed": 0.7}, seed=1))
    tonight = _cli(
        home,
        # One attempt: a malformed reply gets its one repair turn, then a typed parse_error.
        # Coverage falls below half: the floor is lowered so that the run finishes and the
        # report, comparing with the baseline, is what flags it.
        {
            **env,
            "RAGJUDGE_MODEL": "model-b",
            "RAGJUDGE_MAX_ATTEMPTS": "1",
            "RAGJUDGE_MIN_COVERAGE": "0.3",
        },
        "sweep",
        "--config",
        str(cfg),
        "--new",
        "--tag",
        "nightly",
        "--out",
        str(tmp_path / "s2"),
    )
    assert tonight.returncode == 0, tonight.stderr[-3000:]

    out = tmp_path / "report"
    rep = _cli(
        home, {}, "report", "--run", "latest", "--baseline-tag", "baseline", "--out", str(out)
    )
    assert rep.returncode == 1, rep.stderr[-3000:]
    data = json.loads((out / "report.json").read_text())
    flagged = [m for m in data["metrics"] if m["coverage_dropped"]]
    assert flagged, data["metrics"]
    assert all(m["current_coverage"] < m["baseline_coverage"] for m in flagged)
    assert "coverage fell" in flagged[0]["reason"]
    # retrieval did not change (same BM25 on the same data): identical, never tested or flagged
    assert all(m["verdict"] == "identical" for m in data["metrics"] if m["kind"] == "retrieval")

    with open_store(home / "runs.sqlite") as store:
        statuses = {r.result.status.value for r in store.judge_results(store.resolve("latest"))}
    assert "parse_error" in statuses
    for path in [*home.rglob("*"), *out.rglob("*")]:
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), f"API key leaked into {path}"
