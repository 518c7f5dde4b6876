"""`ragjudge report` end to end: runs written to a real run store, the real CLI in a subprocess,
exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from ragjudge.schema import Answer, ClaimVerdict, Evidence, JudgeResult, JudgeStatus, RunManifest
from ragjudge.store import RetrievalMetric, RunStore, StoredJudgeResult

N = 40


def _write_run(store, run_id, *, started, faith, ndcg, dataset_hash="d1", version="1", tags=()):
    store.create_run(
        RunManifest(
            run_id=run_id,
            dataset_name="demo",
            dataset_hash=dataset_hash,
            config_hash="c",
            config={},
            ragjudge_version="0.1.0",
            started_at=started,
            status="finished",
        )
    )
    results, answers, metrics = [], [], []
    for i in range(N):
        case = f"q{i:02d}"
        score = faith[i]
        ok = score is not None
        results.append(
            StoredJudgeResult(
                case,
                5,
                "faithfulness",
                JudgeResult(
                    judge="faithfulness",
                    judge_version=version,
                    backend="offline",
                    item_id=f"{case}@k5",
                    score=score,
                    status=JudgeStatus.ok if ok else JudgeStatus.parse_error,
                    evidence=Evidence(
                        claims=[
                            ClaimVerdict(
                                claim=f"claim of {case}",
                                verdict="supported" if ok and score > 0.5 else "unsupported",
                            )
                        ]
                    ),
                ),
            )
        )
        answers.append(
            Answer(
                case_id=case,
                k=5,
                text="a",
                context_ids=["d1"],
                contexts=["c"],
                generator="extractive",
            )
        )
        metrics.append(RetrievalMetric(case, 5, "ndcg", ndcg[i]))
    store.put_judge_results(run_id, results)
    store.put_answers(run_id, answers)
    store.put_retrieval_metrics(run_id, metrics)
    for t in tags:
        store.tag(run_id, t)


def _report(home, *args):
    env = {**os.environ, "RAGJUDGE_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "ragjudge", "report", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.fixture
def store_home(tmp_path):
    home = tmp_path / "home"
    rng = np.random.default_rng(7)
    base = rng.uniform(0.5, 1.0, N)
    ndcg = rng.uniform(0.3, 0.9, N)
    with RunStore(home / "runs.sqlite") as store:
        _write_run(
            store,
            "base",
            started="2026-12-01T02:30:00+00:00",
            faith=list(base),
            ndcg=list(ndcg),
            tags=["baseline"],
        )
        same = list(np.clip(base + rng.normal(0, 0.01, N), 0, 1))
        _write_run(store, "same", started="2026-12-02T02:30:00+00:00", faith=same, ndcg=list(ndcg))
        worse = [max(0.0, v - 0.3) for v in base]
        _write_run(
            store, "worse", started="2026-12-03T02:30:00+00:00", faith=worse, ndcg=list(ndcg)
        )
        _write_run(
            store,
            "other",
            started="2026-12-04T02:30:00+00:00",
            faith=list(base),
            ndcg=list(ndcg),
            dataset_hash="d2",
        )
    return home


def test_nothing_regressed_exits_0(store_home, tmp_path):
    out = tmp_path / "r0"
    proc = _report(store_home, "--run", "same", "--baseline-tag", "baseline", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "report.json").read_text())
    assert data["verdict"] == "ok" and data["baseline"]["run_id"] == "base"
    assert {m["metric"] for m in data["metrics"]} == {"faithfulness", "ndcg"}
    assert (out / "report.html").exists() and (out / "report.md").exists()


def test_regression_exits_1_with_movers_and_history(store_home, tmp_path):
    out = tmp_path / "r1"
    proc = _report(
        store_home, "--run", "worse", "--baseline", "base", "--out", str(out), "--format", "json,md"
    )
    assert proc.returncode == 1, proc.stderr
    assert "REGRESSED" in proc.stderr and "faithfulness @ k=5" in proc.stderr
    data = json.loads((out / "report.json").read_text())
    faith = next(m for m in data["metrics"] if m["metric"] == "faithfulness")
    assert faith["verdict"] == "regressed" and faith["ci_high"] < 0
    ndcg = next(m for m in data["metrics"] if m["metric"] == "ndcg")
    assert ndcg["verdict"] == "unchanged"
    assert data["drops"] and data["drops"][0]["metric"] == "faithfulness"
    # history: the three runs on the same data set up to "worse", oldest first
    assert [p["run_id"] for p in data["history"]] == ["base", "same", "worse"]
    assert not (out / "report.html").exists()


def test_bad_input_exits_2_with_a_clear_message(store_home, tmp_path):
    proc = _report(store_home, "--run", "worse", "--baseline", "nope")
    assert (
        proc.returncode == 2 and "no run 'nope'" in proc.stderr and "Traceback" not in proc.stderr
    )
    proc = _report(store_home, "--run", "other", "--baseline", "base")
    assert proc.returncode == 2 and "different data sets" in proc.stderr
    proc = _report(
        store_home,
        "--run",
        "other",
        "--baseline",
        "base",
        "--allow-partial",
        "--out",
        str(tmp_path / "p"),
        "--format",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    notes = json.loads((tmp_path / "p" / "report.json").read_text())["notes"]
    assert any("data sets differ" in n for n in notes)
    t = tmp_path / "t.yaml"
    t.write_text("metrics:\n  faithfullness: {min_effect: 0.1}\n")
    proc = _report(store_home, "--run", "worse", "--baseline", "base", "--thresholds", str(t))
    assert proc.returncode == 2 and "unknown metrics: faithfullness" in proc.stderr
    proc = _report(store_home, "--run", "base", "--baseline-tag", "baseline")
    assert proc.returncode == 2 and "no run other than base" in proc.stderr
