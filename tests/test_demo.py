"""``ragjudge demo``: the offline sweep on the bundled demo set, end to end (real retrieval,
the extractive generator, the offline judges), on a sample of the questions to keep CI fast."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ragjudge.cli import app
from ragjudge.store import open_store
from ragjudge.sweep.demo import demo_config


def test_demo_config_is_valid_and_offline():
    cfg = demo_config()
    assert cfg.ks == list(range(1, 11))
    assert cfg.retriever.kind == "hybrid" and cfg.generator.kind == "extractive"
    assert cfg.judges.backend == "offline" and len(cfg.judges.names) == 5


@pytest.mark.slow
def test_demo_command_writes_report_and_prints_k(tmp_path):
    out = tmp_path / "demo"
    res = CliRunner().invoke(app, ["demo", "--out", str(out), "--cases", "5"])
    assert res.exit_code == 0, res.output
    choice = json.loads((out / "choice.json").read_text())
    assert f"chosen k = {choice['best_k']}" in res.output
    assert choice["best_k"] in range(1, 11) and choice["best_k"] in choice["within_noise"]
    for name in (
        "summary.md",
        "summary.html",
        "metrics.csv",
        "costs.csv",
        "judges_vs_k.png",
        "retrieval_vs_k.png",
        "objective_vs_k.png",
        "tokens_cost_vs_k.png",
    ):
        assert (out / name).stat().st_size > 0, name
    (run,) = open_store().list_runs()
    assert run.status == "finished" and "demo" in run.tags
    counts = open_store().counts(run.run_id)
    assert counts["answers"] == 5 * 10 and counts["judge_results"] == 5 * 10 * 5
    metrics = (out / "metrics.csv").read_text()
    assert "context_recall,judge,10," in metrics and "ndcg,retrieval,1," in metrics


@pytest.mark.slow
def test_demo_runs_on_one_model_without_torch(tmp_path):
    """Retrieval, the generator and the judges share the judges' encoder (the shipped ONNX
    model): ``ragjudge demo`` never imports torch nor sentence-transformers (about 8 s and
    300 MB), nor scipy.stats (about 1 s; only a report's coverage test needs it), nor the
    regression report (about 0.3 s), pyplot or the LLM judges (an offline run registers the
    offline ones only)."""
    heavy = (
        "torch",
        "sentence_transformers",
        "scipy.stats",
        "ragjudge.report",
        "matplotlib.pyplot",
        "ragjudge.judges.llm",
    )
    code = (
        "import atexit, sys; from ragjudge.cli import main; "
        f"atexit.register(lambda: print(sorted(m for m in {heavy!r} if m in sys.modules))); "
        f"main(['demo', '--cases', '3', '--out', {str(tmp_path / 'out')!r}])"
    )
    env = {**os.environ, "RAGJUDGE_HOME": str(tmp_path / "home")}
    env.pop("RAGJUDGE_JUDGE_PRECISION", None)
    res = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == "[]"
