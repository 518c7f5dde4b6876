"""`ragjudge agree` and `ragjudge spot-check` end to end: a run in a real run store, a results
JSONL, label files, JSON/HTML outputs, and clear errors (exit code 2, file and line)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragjudge.calibrate.labels import load_labels
from ragjudge.schema import Answer, JudgeResult, JudgeStatus, RunManifest
from ragjudge.store import StoredJudgeResult, open_store

JUDGES = ("faithfulness", "answer_relevancy")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragjudge", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=240,
    )


@pytest.fixture
def run_store(tmp_path: Path) -> tuple[Path, dict[str, float]]:
    """60 cases x k in {3, 5}, two judges; hidden 'truth' decides the human labels."""
    rng = np.random.default_rng(0)
    store_path = tmp_path / "runs.sqlite"
    truth: dict[str, float] = {}
    manifest = RunManifest(
        run_id="run-abc",
        dataset_name="demo",
        dataset_hash="h",
        config_hash="c",
        config={},
        ragjudge_version="0",
        models={"generator": "gpt-4o-mini", "judge": "gpt-4o"},
        started_at="2026-01-01T00:00:00+00:00",
    )
    answers, stored = [], []
    for c in range(60):
        for k in (3, 5):
            item = f"c{c}@k{k}"
            good = float(rng.uniform() < 0.6)
            truth[item] = good
            text = " ".join(["word"] * int(rng.integers(5, 60)))
            answers.append(
                Answer(
                    case_id=f"c{c}",
                    k=k,
                    text=text,
                    context_ids=["d1"],
                    contexts=["<b>context</b> text"],
                    generator="extractive",
                )
            )
            for j, judge in enumerate(JUDGES):
                if c == 7 and j == 0:
                    res = JudgeResult(
                        judge=judge,
                        judge_version="1",
                        backend="offline",
                        item_id=f"c{c}",  # stores may keep another id: the store's (case, k) wins
                        score=None,
                        status=JudgeStatus.timeout,
                        error="slow",
                    )
                else:
                    score = float(np.clip(0.2 + 0.55 * good + rng.normal(0, 0.15), 0, 1))
                    res = JudgeResult(
                        judge=judge,
                        judge_version="1",
                        backend="offline",
                        item_id=f"c{c}",
                        score=score,
                        status=JudgeStatus.ok,
                    )
                stored.append(StoredJudgeResult(f"c{c}", k, judge, res))
    with open_store(store_path) as store:
        store.create_run(manifest)
        store.put_answers("run-abc", answers)
        store.put_judge_results("run-abc", stored)
    return store_path, truth


def _labels(path: Path, truth: dict[str, float], items: list[str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["item_id", "dimension", "label", "annotator"])
        for i, item in enumerate(items):
            w.writerow([item, "faithfulness", int(truth[item]), "ann1"])
            # A second annotator who disagrees on every fifth item.
            flip = i % 5 == 0
            w.writerow([item, "faithfulness", int(truth[item]) ^ int(flip), "ann2"])
            grade = 5 - (i % 2) if truth[item] else 1 + (i % 2)
            w.writerow([item, "answer_relevancy", grade, "ann1"])


def test_agree_on_a_stored_run_writes_json_and_html(
    tmp_path: Path, run_store: tuple[Path, dict[str, float]]
) -> None:
    store_path, truth = run_store
    items = sorted(truth)[::3]  # 40 labelled items
    labels = tmp_path / "labels.csv"
    _labels(labels, truth, items)
    out_json, out_html = tmp_path / "a.json", tmp_path / "a.html"
    proc = _cli(
        "agree", "--run", "run-a", "--store", str(store_path), "--labels", str(labels),
        "--resamples", "200", "--json", str(out_json), "--html", str(out_html), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "cohen_kappa" in proc.stdout and "quadratic_kappa" in proc.stdout
    report = json.loads(out_json.read_text())
    dims = {d["agreement"]["dimension"]: d for d in report["dimensions"]}
    faith = dims["faithfulness"]
    acc = next(e for e in faith["agreement"]["estimates"] if e["name"] == "accuracy")
    assert acc["value"] > 0.8 and acc["ci_low"] < acc["value"] < acc["ci_high"]
    assert faith["agreement"]["inter_annotator_alpha"]["value"] < 1.0
    assert faith["agreement"]["status_counts"].get("timeout", 0) >= 1
    methods = [m["method"] for m in faith["estimation"]["estimates"]]
    assert methods == ["human_only", "judge_only", "ppi", "ppi++"]
    ppi = faith["estimation"]["estimates"][2]
    assert ppi["n_unlabelled"] > 70 and ppi["ci_low"] < 0.6 < ppi["ci_high"] + 0.1
    probes = {b["probe"]: b for b in faith["bias"]}
    assert probes["length"]["applicable"] and probes["self_preference"]["applicable"]
    assert [c["method"] for c in faith["calibration"]] == ["platt", "isotonic"]
    assert dims["answer_relevancy"]["agreement"]["scale"] == "ordinal"
    html = out_html.read_text()
    assert html.count("data:image/png;base64,") >= 5
    assert "<b>context</b>" not in html  # user text never enters unescaped


def test_agree_with_results_jsonl_and_errors(
    tmp_path: Path, run_store: tuple[Path, dict[str, float]]
) -> None:
    store_path, truth = run_store
    with open_store(store_path) as store:
        rows = store.judge_results("run-abc")
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(
            r.result.model_copy(update={"item_id": f"{r.case_id}@k{r.k}"}).model_dump_json() + "\n"
            for r in rows
        )
    )
    labels = tmp_path / "labels.csv"
    _labels(labels, truth, sorted(truth)[:20])
    proc = _cli(
        "agree", "--results", str(results), "--labels", str(labels), "--resamples", "50",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "not applicable" in proc.stdout  # no run metadata: no self-preference probe

    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,dimension,label\nc1@k3,faithfulness,1\nnope@k3,faithfulness,0\n")
    proc = _cli("agree", "--results", str(results), "--labels", str(bad), cwd=tmp_path)
    assert proc.returncode == 2
    assert "bad.csv:3" in proc.stderr and "matches no judged item" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = _cli("agree", "--labels", str(bad), cwd=tmp_path)
    assert proc.returncode == 2 and "exactly one of --run" in proc.stderr


def _picked_excluding(exclude: Path, out: Path, store_path: Path) -> set[str]:
    """The item ids of a 10-item spot-check sheet written to ``out``, skipping ``exclude``'s."""
    proc = _cli(
        "spot-check", "--run", "latest", "--store", str(store_path), "--n", "10",
        "--exclude", str(exclude), "--out", str(out), cwd=out.parent,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with out.open(newline="", encoding="utf-8") as fh:
        return {r["item_id"] for r in csv.DictReader(fh)}


def test_spot_check_sheet_round_trips_into_agree(
    tmp_path: Path, run_store: tuple[Path, dict[str, float]]
) -> None:
    store_path, truth = run_store
    sheet = tmp_path / "to_label.csv"
    proc = _cli(
        "spot-check", "--run", "latest", "--store", str(store_path), "--n", "20",
        "--out", str(sheet), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "picked 20 items" in proc.stdout and "disagreement" in proc.stdout
    with sheet.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len({r["item_id"] for r in rows}) == 20
    assert {r["dimension"] for r in rows} == set(JUDGES)
    assert all(r["label"] == "" for r in rows) and rows[0]["answer"].startswith("word")
    # A blank sheet loads (every row skipped); filled rows load with their values.
    assert load_labels(sheet).skipped_blank == len(rows)
    for r in rows:
        r["label"] = str(int(truth[r["item_id"]]))
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert len(load_labels(sheet).labels) == len(rows)
    ok = _cli(
        "agree", "--run", "latest", "--store", str(store_path), "--labels", str(sheet),
        "--resamples", "50", cwd=tmp_path,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    # The sheet records the answer that was labelled: a different answer in the run is refused.
    tampered = tmp_path / "tampered.csv"
    rows_t = [dict(r) for r in rows]
    rows_t[1]["answer"] = "a different answer"
    with tampered.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows_t)
    bad = _cli(
        "agree", "--run", "latest", "--store", str(store_path), "--labels", str(tampered),
        cwd=tmp_path,
    )  # fmt: skip
    assert bad.returncode == 2 and "another answer" in bad.stderr
    # Picking again excluding what is labelled returns new items only.
    again = _picked_excluding(sheet, tmp_path / "next.csv", store_path)
    assert len(again) == 10 and not again & {r["item_id"] for r in rows}
    # A sheet handed out and not filled in yet is excluded too (it used to be read as nothing)
    third = _picked_excluding(tmp_path / "next.csv", tmp_path / "third.csv", store_path)
    assert third and not third & again


def test_agree_rejudges_a_filled_sheet_offline(tmp_path: Path) -> None:
    sheet = tmp_path / "sheet.csv"
    rows = [
        ("q1@k1", "1", "Paris is the capital of France. [1]"),
        ("q2@k1", "0", "Berlin has 40 million inhabitants. [1]"),
        ("q3@k1", "1", "Berlin is the capital of Germany. [1]"),
        ("q4@k1", "0", "Paris has a population of 90 million. [1]"),
    ]
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["item_id", "dimension", "label", "question", "answer", "contexts"])
        for item, label, answer in rows:
            context = (
                "[1] Paris is the capital and largest city of France, with about 2.1 million "
                "residents. Berlin is the capital of Germany, with about 3.7 million residents."
            )
            w.writerow([item, "faithfulness", label, "Tell me about the city.", answer, context])
    out = tmp_path / "a.json"
    proc = _cli(
        "agree", "--labels", str(sheet), "--rejudge", "offline", "--resamples", "50",
        "--json", str(out), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    dim = json.loads(out.read_text())["dimensions"][0]
    assert dim["agreement"]["n_scored"] == 4
    auc = next(e for e in dim["agreement"]["estimates"] if e["name"] == "auc")
    assert auc["value"] is not None
    both = _cli("agree", "--labels", str(sheet), "--rejudge", "offline", "--run", "x", cwd=tmp_path)
    assert both.returncode == 2 and "--rejudge" in both.stderr
