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
from ragjudge.store import RetrievalMetric, StoredJudgeResult, open_store

N = 40


def _write_run(
    store,
    run_id,
    *,
    started,
    faith,
    ndcg,
    dataset_hash="d1",
    version="1",
    tags=(),
    status="finished",
):
    store.create_run(
        RunManifest(
            run_id=run_id,
            dataset_name="demo",
            dataset_hash=dataset_hash,
            config_hash="c",
            config={},
            ragjudge_version="0.1.0",
            started_at=started,
            status=status,
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


class _Done:
    def __init__(self, returncode: int, stderr: str):
        self.returncode, self.stderr = returncode, stderr


def _inproc(capsys, monkeypatch, home, *args):
    """The same command line as ``_report``, run in this process (no interpreter start-up)."""
    from ragjudge.cli import main

    monkeypatch.setenv("RAGJUDGE_HOME", str(home))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["report", *args])
    return _Done(int(exc.value.code or 0), capsys.readouterr().err)


@pytest.fixture
def store_home(tmp_path):
    home = tmp_path / "home"
    rng = np.random.default_rng(7)
    base = rng.uniform(0.5, 1.0, N)
    ndcg = rng.uniform(0.3, 0.9, N)
    with open_store(home / "runs.sqlite") as store:
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
    # identical paired values: no test, outside every family (was "unchanged")
    assert ndcg["verdict"] == "identical" and ndcg["p_value"] is None
    assert (faith["role"], ndcg["role"]) == ("primary", "secondary")
    assert data["moved"] and data["moved"][0]["moves"][0]["metric"] == "faithfulness"
    # history: the three runs on the same data set up to "worse", oldest first
    assert [p["run_id"] for p in data["history"]] == ["base", "same", "worse"]
    assert not (out / "report.html").exists()


def test_bad_input_exits_2_with_a_clear_message(store_home, tmp_path, capsys, monkeypatch):
    def _report(home, *args):
        return _inproc(capsys, monkeypatch, home, *args)

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
    assert proc.returncode == 2 and f"{t}:2: metrics.faithfullness: unknown metric" in proc.stderr
    proc = _report(store_home, "--run", "base", "--baseline-tag", "baseline")
    assert proc.returncode == 2 and "no run other than base" in proc.stderr


def test_latest_compares_only_finished_runs_unless_allowed(
    store_home, tmp_path, capsys, monkeypatch
):
    def _report(home, *args):
        return _inproc(capsys, monkeypatch, home, *args)

    rng = np.random.default_rng(8)
    with open_store(store_home / "runs.sqlite") as store:
        # a killed run, newer than every finished one, that lost most of its scores
        killed = [float(v) if i < 12 else None for i, v in enumerate(rng.uniform(0, 1, N))]
        _write_run(
            store,
            "killed",
            started="2026-12-05T02:30:00+00:00",
            faith=killed,
            ndcg=list(rng.uniform(0.3, 0.9, N)),
            dataset_hash="d2",
            status="running",
        )
    out = tmp_path / "fin"
    proc = _report(
        store_home, "--run", "latest", "--baseline-tag", "baseline", "--allow-partial",
        "--out", str(out), "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads((out / "report.json").read_text())
    assert data["run"]["run_id"] == "other" and data["warnings"] == []
    # --baseline latest means the newest finished run too (it took the killed one): the same
    # run as --run latest, refused as a run compared with itself
    proc = _report(store_home, "--run", "latest", "--baseline", "latest", "--allow-partial")
    assert proc.returncode == 2 and "are the same run other" in proc.stderr, proc.stderr
    proc = _report(store_home, "--run", "killed", "--baseline", "base", "--allow-partial")
    assert proc.returncode == 2 and "not finished (status " in proc.stderr
    assert "--allow-unfinished" in proc.stderr and "Traceback" not in proc.stderr
    out = tmp_path / "unf"
    proc = _report(
        store_home, "--run", "latest", "--baseline", "base", "--allow-partial",
        "--allow-unfinished", "--out", str(out), "--format", "json,md",
    )  # fmt: skip
    assert "not finished" in proc.stderr, proc.stderr
    data = json.loads((out / "report.json").read_text())
    assert data["run"]["run_id"] == "killed"
    assert any("current run killed is not finished" in w for w in data["warnings"])
    md = (out / "report.md").read_text()
    assert md.index("**Warning:**") < md.index("**Verdict:")


def test_out_is_a_file_and_floor_at_a_missing_k_are_one_line_errors(
    store_home, tmp_path, capsys, monkeypatch
):
    def _report(home, *args):
        return _inproc(capsys, monkeypatch, home, *args)

    target = tmp_path / "report.txt"
    target.write_text("keep me")
    proc = _report(store_home, "--run", "worse", "--baseline", "base", "--out", str(target))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{target}: --out must be a folder" in proc.stderr
    assert target.read_text() == "keep me"
    t = tmp_path / "t.yaml"
    t.write_text("defaults: {alpha: 0.05}\nmetrics:\n  faithfulness:\n    floors: {7: 0.8}\n")
    proc = _report(store_home, "--run", "worse", "--baseline", "base", "--thresholds", str(t))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{t}:4: metrics.faithfulness.floors.7" in proc.stderr, proc.stderr
    assert "the runs have k = 5" in proc.stderr
    t.write_text("primary: {metrics: [faithfulness], ks: [3]}\n")
    proc = _report(store_home, "--run", "worse", "--baseline", "base", "--thresholds", str(t))
    assert proc.returncode == 2 and f"{t}:1: primary.ks.0: k=3" in proc.stderr, proc.stderr
    proc = _report(store_home, "--run", "worse", "--baseline", "base", "--headline-k", "3")
    assert proc.returncode == 2 and "--headline-k 3: the runs have k = 5" in proc.stderr


def test_latest_names_the_run_it_picked_and_the_newer_one_it_skipped(
    store_home, tmp_path, capsys, monkeypatch
):
    def _report(home, *args):
        return _inproc(capsys, monkeypatch, home, *args)

    rng = np.random.default_rng(9)
    with open_store(store_home / "runs.sqlite") as store:
        _write_run(
            store, "stopped", started="2026-12-06T02:30:00+00:00",
            faith=list(rng.uniform(0, 1, N)), ndcg=list(rng.uniform(0.3, 0.9, N)),
            dataset_hash="d2", status="interrupted",
        )  # fmt: skip
    out = tmp_path / "r"
    proc = _report(
        store_home, "--run", "latest", "--baseline", "base", "--allow-partial",
        "--out", str(out), "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "--run latest is run other" in proc.stderr
    assert "newer run stopped did not finish (status interrupted)" in proc.stderr
    # the same run as its own baseline compares nothing: refused
    proc = _report(store_home, "--run", "latest", "--baseline", "other")
    assert proc.returncode == 2 and "same run" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = _report(
        store_home, "--run", "latest", "--baseline", "latest", "--allow-unfinished",
    )  # fmt: skip
    assert proc.returncode == 2 and "compared with itself" in proc.stderr, proc.stderr
