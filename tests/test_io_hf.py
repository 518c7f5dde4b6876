"""Hugging Face datasets: loading from local files and folders only, exporting as a Dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragjudge.errors import ConfigError, DataError
from ragjudge.io import load_hf, to_hf_dataset
from ragjudge.schema import Document, TestCase


def test_round_trip_through_save_to_disk(tmp_path: Path) -> None:
    cases = [
        TestCase(
            id="c1", question="Why?", reference="Because.", relevant={"d1": 3}, metadata={"k": 1}
        ),
        TestCase(id="c2", question="Who?", relevant={"d2": 1, "d3": 0}),
    ]
    ds = to_hf_dataset(cases)
    assert ds.num_rows == 2
    assert set(ds.column_names) == {"id", "question", "reference", "relevant", "metadata"}
    assert json.loads(ds[1]["relevant"]) == {"d2": 1, "d3": 0}
    ds.save_to_disk(str(tmp_path / "saved"))
    loaded = load_hf(tmp_path / "saved")
    assert loaded == cases


def test_documents_from_local_jsonl_and_csv(tmp_path: Path) -> None:
    jsonl = tmp_path / "docs.jsonl"
    rows = [
        {"doc_id": "a", "title": "A", "text": "alpha"},
        {"doc_id": "b", "title": "B", "text": "beta"},
    ]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs = load_hf(jsonl)
    assert docs == [
        Document(id="a", title="A", text="alpha"),
        Document(id="b", title="B", text="beta"),
    ]
    csv = tmp_path / "cases.csv"
    csv.write_text("qid,query,answer\nq1,What?,That\n")
    cases = load_hf(csv, id_field="qid")
    assert cases == [TestCase(id="q1", question="What?", reference="That")]


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="local files only"):
        load_hf("squad")  # a Hub name is never downloaded
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    with pytest.raises(DataError, match=r"dup\.jsonl:2: duplicate id 'a'"):
        load_hf(dup)
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": ""}\n')
    with pytest.raises(DataError, match=r"empty\.jsonl:2: document 'b' has an empty text"):
        load_hf(empty)
    with pytest.raises(ConfigError, match="unknown option"):
        load_hf(empty, colour_field="x")
    (tmp_path / "folder").mkdir()
    with pytest.raises(DataError, match="save_to_disk"):
        load_hf(tmp_path / "folder")
