"""``ragjudge metrics`` end to end, through the real entry point in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragjudge.io import DataWarning, read_trec_qrels, read_trec_run, write_trec_run
from ragjudge.metrics import evaluate_run


def _ragjudge(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from ragjudge.cli import main; main()", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "300"},  # rich would wrap long paths at 80 columns
    )


def _files(tmp_path: Path) -> tuple[Path, Path]:
    qrels = tmp_path / "qrels.trec"
    qrels.write_text("q1 0 a 2\nq1 0 b 1\nq2 0 c 1\nq3 0 d 1\n")
    run = tmp_path / "run.trec"
    write_trec_run(
        {"q1": {"b": 2.0, "a": 1.0, "x": 0.5}, "q2": {"x": 1.0, "c": 0.2}, "q9": {"a": 1.0}}, run
    )
    return qrels, run


def test_metrics_table_and_json(tmp_path: Path) -> None:
    qrels, run = _files(tmp_path)
    out = tmp_path / "out" / "m.json"
    proc = _ragjudge("metrics", "--qrels", qrels, "--run", run, "--k", "1,2", "--json", out)
    assert proc.returncode == 0, proc.stderr
    assert "ndcg_linear@2" in proc.stdout and "95% CI" in proc.stdout
    assert "1 run queries are not in the qrels" in proc.stderr
    assert "1 judged queries have no ranking and score 0" in proc.stderr
    data = json.loads(out.read_text())
    assert data["n_queries"] == 3
    assert set(data["per_query"]) == {"q1", "q2", "q3"}
    with pytest.warns(DataWarning):
        expected = evaluate_run(read_trec_qrels(qrels), read_trec_run(run), ks=[1, 2])
    assert data["metrics"] == pytest.approx(expected.mean)
    assert data["metrics"]["precision@1"] == pytest.approx(1 / 3)
    assert data["metrics"]["mrr"] == pytest.approx((1 + 1 / 2 + 0) / 3)
    assert data["ci"]["mrr"] == pytest.approx(list(expected.ci["mrr"]))
    assert "map@2" in data["per_query"]["q1"] and "r_precision" in data["metrics"]


def test_threshold_changes_binary_metrics(tmp_path: Path) -> None:
    qrels, run = _files(tmp_path)
    out = tmp_path / "t.json"
    proc = _ragjudge("metrics", "--qrels", qrels, "--run", run, "--threshold", "2", "--json", out)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    # Only q1's "a" (grade 2) is relevant now; it is ranked second.
    assert data["per_query"]["q1"]["mrr"] == 0.5
    assert data["per_query"]["q1"]["precision@1"] == 0.0


@pytest.mark.parametrize(
    ("run_text", "where", "message"),
    [
        ("q1 Q0 a 1 2.0 t\nq1 Q0 b 2\n", ":2: ", "expected 6 columns"),
        ("q1 Q0 a 1 high t\n", ":1: ", "score must be a number"),
    ],
)
def test_malformed_run_is_one_message_and_exit_2(
    tmp_path: Path, run_text: str, where: str, message: str
) -> None:
    qrels, _ = _files(tmp_path)
    run = tmp_path / "bad.trec"
    run.write_text(run_text)
    proc = _ragjudge("metrics", "--qrels", qrels, "--run", run)
    assert proc.returncode == 2
    assert f"{run}{where}" in proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_file_and_bad_option(tmp_path: Path) -> None:
    qrels, run = _files(tmp_path)
    proc = _ragjudge("metrics", "--qrels", tmp_path / "none.trec", "--run", run)
    assert (
        proc.returncode == 2 and "file not found" in proc.stderr and "Traceback" not in proc.stderr
    )
    proc = _ragjudge("metrics", "--qrels", qrels, "--run", run, "--k", "0,x")
    assert proc.returncode == 2 and "--k must be" in proc.stderr and "Traceback" not in proc.stderr
    proc = _ragjudge("metrics", "--qrels", qrels, "--run", run, "--threshold", "0")
    assert proc.returncode == 2 and "threshold" in proc.stderr and "Traceback" not in proc.stderr
