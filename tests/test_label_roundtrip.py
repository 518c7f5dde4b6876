"""The labelling round trip closes: a run -> ``spot-check`` sheet -> labels filled in ->
``fit-judges`` and ``agree`` read the same sheet (contexts, blank labels, item ids)."""

from __future__ import annotations

import csv
from pathlib import Path

from typer.testing import CliRunner

from ragjudge.calibrate.spotcheck import split_contexts
from ragjudge.cli import app
from ragjudge.judges.offline.fit import read_labels
from ragjudge.judges.offline.params import load_params
from ragjudge.resources import demo_dir
from ragjudge.store import open_store
from ragjudge.sweep.config import parse_config
from ragjudge.sweep.run import run_sweep


def test_spot_check_sheet_filled_in_is_read_by_fit_judges_and_agree(tmp_path: Path) -> None:
    config = parse_config(
        {
            "dataset": {"path": str(demo_dir()), "limit": 6},
            "retriever": {"kind": "bm25"},
            "judges": {"names": ["faithfulness", "answer_relevancy"], "backend": "offline"},
            "ks": [1, 2],
        }
    )
    run_sweep(config)
    store = open_store()
    run_id = store.resolve("latest")
    answers = {f"{a.case_id}@k{a.k}": a for a in store.answers(run_id)}

    sheet = tmp_path / "to_label.csv"
    res = CliRunner().invoke(
        app,
        [
            "spot-check",
            "--run",
            "latest",
            "--n",
            "8",
            "--out",
            str(sheet),
            "--data",
            str(demo_dir()),
        ],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output
    with sheet.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows = reader.fieldnames, list(reader)
    assert fields is not None and len(rows) >= 8
    # An annotator fills in part of the sheet: both classes per dimension, the rest left blank.
    filled = 0
    for dim in ("faithfulness", "answer_relevancy"):
        mine = [r for r in rows if r["dimension"] == dim]
        for i, r in enumerate(mine[:6]):
            r["label"], r["annotator"] = ("1" if i % 2 else "0"), "tester"
            filled += 1
    assert filled == 12
    with sheet.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)

    blank: list[int] = []
    labelled = read_labels(sheet, blank=blank)
    assert len(labelled) == filled and len(blank) == len(rows) - filled
    for row, src in zip(labelled, [r for r in rows if r["label"]], strict=True):
        item = answers[src["item_id"]]
        assert row.contexts == item.contexts == split_contexts(src["contexts"])
        assert row.answer == item.text and row.group == item.case_id

    out = tmp_path / "params.json"
    res = CliRunner().invoke(
        app, ["fit-judges", "--labels", str(sheet), "--out", str(out)], catch_exceptions=False
    )
    assert res.exit_code == 0, res.output
    assert f"{len(blank)} rows with a blank label skipped" in " ".join(res.output.split())
    params = load_params(out)
    assert {"support", "relevancy"} <= set(params.provenance["fitted_models"])

    res = CliRunner().invoke(
        app,
        ["agree", "--run", "latest", "--labels", str(sheet), "--resamples", "200"],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.output


def test_bundled_demo_labels_are_a_fit_judges_file() -> None:
    """The demo's labels.csv is a filled spot-check sheet: every row reads, with its numbered
    contexts split back into a list."""
    rows = read_labels(demo_dir() / "labels.csv")
    assert len(rows) == 120
    assert all(r.contexts and not r.contexts[0].startswith("[1]") for r in rows)
    assert {r.dimension for r in rows} == {"faithfulness", "answer_relevancy", "completeness"}
    assert len({r.group for r in rows}) == 20  # 20 cases, each at k = 3 and k = 5
