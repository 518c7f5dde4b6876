"""Export of a stored run in every format, and the ``runs`` commands on a real store."""

from __future__ import annotations

import importlib
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from ragjudge.cli import app
from ragjudge.errors import ConfigError
from ragjudge.report.from_store import load_run_scores
from ragjudge.store import open_store
from ragjudge.store.export import export_run, run_rows
from ragjudge.store.view import RunView
from ragjudge.sweep.run import run_sweep
from tests.test_sweep_run import config, make_testset, parts


@pytest.fixture
def stored_run(_isolated_home):
    store = open_store()
    out = run_sweep(config(), store=store, components=parts(), testset=make_testset())
    return store, out.run_id


def test_rows_are_one_per_case_and_k(stored_run):
    store, run_id = stored_run
    rows = run_rows(RunView.read(store, run_id))
    assert len(rows) == 7 * 4
    first = rows[0]
    assert first["item_id"] == f"{first['case_id']}@k{first['k']}"
    assert {"faithfulness_score", "faithfulness_status", "context_precision_status", "ndcg"} <= set(
        first
    )
    none = [r for r in rows if r["case_id"] == "q-none"]
    assert all(r["ndcg"] is None for r in none)  # no qrels: no retrieval metric, not a zero


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl", "hf"])
def test_export_formats_round_trip(stored_run, tmp_path, fmt):
    store, run_id = stored_run
    path = export_run(store, run_id, fmt, tmp_path / f"out.{fmt}")
    if fmt == "parquet":
        frame = pd.read_parquet(path)
    elif fmt == "csv":
        frame = pd.read_csv(path)
    elif fmt == "jsonl":
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        frame = pd.DataFrame(lines)
        ev = lines[0]["evidence"]["faithfulness"]
        assert ev["item_id"] == lines[0]["item_id"] and ev["status"] == "ok"
    else:
        datasets = importlib.import_module("datasets")
        frame = datasets.load_from_disk(str(path)).to_pandas()
    assert len(frame) == 28
    assert set(frame["k"]) == {1, 2, 3, 4}
    row = frame[(frame["case_id"] == "q-copper") & (frame["k"] == 2)].iloc[0]
    stored = {
        (r.case_id, r.k): r.result.score
        for r in store.judge_results(run_id)
        if r.judge == "faithfulness"
    }
    assert row["faithfulness_score"] == pytest.approx(stored[("q-copper", 2)])


def test_export_bad_format(stored_run, tmp_path):
    store, run_id = stored_run
    with pytest.raises(ConfigError, match="unknown export format 'xlsx'"):
        export_run(store, run_id, "xlsx", tmp_path / "x")


def test_runs_commands(stored_run, tmp_path):
    store, run_id = stored_run
    runner = CliRunner()
    res = runner.invoke(app, ["runs", "list"])
    assert res.exit_code == 0 and run_id[:12] in res.output and "finished" in res.output
    res = runner.invoke(app, ["runs", "show", "latest", "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    assert "Best k =" in res.output and (tmp_path / "rep" / "summary.html").exists()
    res = runner.invoke(app, ["runs", "tag", run_id[:10], "baseline=v1"])
    assert res.exit_code == 0
    assert [m.run_id for m in store.find_by_tag("baseline")] == [run_id]
    out = tmp_path / "e.csv"
    res = runner.invoke(app, ["runs", "export", run_id, "--format", "csv", "--out", str(out)])
    assert res.exit_code == 0 and len(pd.read_csv(out)) == 28


def test_export_to_dash_is_refused_not_a_file_named_dash(stored_run, tmp_path, monkeypatch, capsys):
    from ragjudge.cli import main

    _, run_id = stored_run
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["runs", "export", run_id, "--format", "csv", "--out", "-"])
    assert exc.value.code == 2 and not (tmp_path / "-").exists()
    assert "--out -: runs export writes a file" in " ".join(capsys.readouterr().err.split())


def test_export_without_out_writes_into_the_state_folder_not_the_cwd(
    stored_run, tmp_path, monkeypatch
):
    """Issue #30 item 17's rule, for ``runs export``: nothing lands in the working directory."""
    from ragjudge.home import home

    _, run_id = stored_run
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    res = CliRunner().invoke(app, ["runs", "export", "latest", "--format", "jsonl"])
    assert res.exit_code == 0, res.output
    written = home() / "exports" / f"{run_id}.jsonl"
    assert res.output.strip().splitlines()[-1] == f"wrote {written}"
    assert len(written.read_text().splitlines()) == 28
    assert list(cwd.iterdir()) == []


def test_a_run_keeps_its_test_cases_and_spot_check_needs_no_data_folder(stored_run, tmp_path):
    store, run_id = stored_run
    view = RunView.read(store, run_id)
    assert view.questions["q-copper"] == "Where is copper mined?"
    assert view.references["q-copper"] == "Copper is mined in many countries."
    assert "q-none" in view.questions and "q-none" not in view.references
    assert view.testcases["q-copper"].relevant == {"copper-2": 2}
    # the report reads them too: no data set folder behind this run (a TestSet passed in)
    scores = load_run_scores(store, run_id)
    assert scores.questions == view.questions and scores.relevant["q-copper"] == {"copper-2": 2}
    sheet = tmp_path / "to_label.csv"
    res = CliRunner().invoke(app, ["spot-check", "--run", run_id, "--n", "6", "--out", str(sheet)])
    assert res.exit_code == 0, res.output
    rows = pd.read_csv(sheet, keep_default_na=False).to_dict(orient="records")
    by_case = {r["item_id"].rpartition("@k")[0]: r for r in rows}
    assert rows and all(r["question"] == view.questions[c] for c, r in by_case.items())
    assert all(r["reference"] == view.references.get(c, "") for c, r in by_case.items())
    assert any(r["reference"] for r in rows)
