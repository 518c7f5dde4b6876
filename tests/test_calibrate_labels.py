"""Label files in: scales, annotators, errors with file and line; the join to judge results."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ragjudge.calibrate.join import join_labels
from ragjudge.calibrate.labels import consensus, infer_scale, load_labels
from ragjudge.calibrate.source import from_results_file
from ragjudge.errors import DataError
from ragjudge.schema import JudgeResult, JudgeStatus
from tests.test_exit_codes import run_cli


def _result(item: str, judge: str, score: float | None) -> JudgeResult:
    status = JudgeStatus.ok if score is not None else JudgeStatus.timeout
    return JudgeResult(
        judge=judge,
        judge_version="1",
        backend="offline",
        item_id=item,
        score=score,
        status=status,
    )


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_scales_are_inferred_per_dimension(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "l.csv",
        "item_id,dimension,label,annotator\n"
        "q1@k1,faithfulness,yes,ann1\n"
        "q1@k1,faithfulness,0,ann2\n"
        "q1@k1,completeness,4,ann1\n"
        "q2@k1,completeness,1,ann1\n"
        "q1@k1,answer_relevancy,0.25,ann1\n"
        "q1@k1|q1@k3,faithfulness_pref,a,ann1\n"
        "q2@k1,faithfulness,,ann1\n",
    )
    labels = load_labels(p)
    assert labels.scales == {
        "faithfulness": "binary",
        "completeness": "ordinal",
        "answer_relevancy": "continuous",
        "faithfulness_pref": "pairwise",
    }
    assert labels.skipped_blank == 1
    by_dim = {d: [lab for lab in labels.labels if lab.dimension == d] for d in labels.scales}
    assert [lab.value for lab in by_dim["faithfulness"]] == [1.0, 0.0]
    pref = by_dim["faithfulness_pref"][0]
    assert pref.value == 1.0 and pref.pair == ("q1@k1", "q1@k3")
    assert by_dim["completeness"][1].line == 5


def test_infer_scale_rules() -> None:
    assert infer_scale(["1", "0", "1"]) == "binary"
    assert infer_scale(["1", "1"]) == "binary"
    assert infer_scale(["1", "3", "5"]) == "ordinal"
    assert infer_scale(["0.5", "1"]) == "continuous"
    assert infer_scale(["A", "tie"]) == "pairwise"


def test_jsonl_with_case_and_k_columns(tmp_path: Path) -> None:
    rows = [
        {"case_id": "q1", "k": 3, "dimension": "faithfulness", "label": 1},
        {"case_id": "q2", "k": 3, "dimension": "faithfulness", "label": "no"},
    ]
    p = _write(tmp_path, "l.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")
    labels = load_labels(p)
    assert [lab.item_id for lab in labels.labels] == ["q1@k3", "q2@k3"]


@pytest.mark.parametrize(
    ("body", "line", "needle"),
    [
        ("q1@k1,completeness,3\nq2@k1,completeness,7\n", 3, "out of the ordinal"),
        ("q1@k1,completeness,3\nq2@k1,completeness,0\n", 3, "out of the ordinal"),
        ("q1@k1,faithfulness,0.4\nq2@k1,faithfulness,1.5\n", 3, "continuous"),
        ("q1@k1,faithfulness,1\nq1@k1,faithfulness,0\n", 3, "duplicate label"),
        ("q1@k1,pref,a\n", 2, "name both items"),
        (",faithfulness,1\n", 2, "missing 'item_id'"),
        # the label that kept an inferred scale off its majority is named, not a good row
        ("q1@k1,completeness,3\nq2@k1,completeness,maybe\nq3@k1,completeness,4\n", 3, "no scale"),
        ("q1@k1,completeness,3\nq2@k1,completeness,4\nq3@k1,completeness,0.5\n", 4, "off the ord"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, body: str, line: int, needle: str) -> None:
    p = _write(tmp_path, "bad.csv", "item_id,dimension,label\n" + body)
    with pytest.raises(DataError) as err:
        load_labels(p)
    assert err.value.line == line
    assert err.value.path == str(p)
    assert needle in str(err.value)


def test_explicit_scale_column_is_enforced(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "l.csv",
        "item_id,dimension,label,scale\nq1@k1,faith,1,ordinal\nq2@k1,faith,0,\n",
    )
    with pytest.raises(DataError, match="ordinal") as err:
        load_labels(p)
    assert err.value.line == 3


def test_consensus_majority_then_closest_to_mean() -> None:
    assert consensus([1, 1, 0]) == 1
    assert consensus([1, 0]) == 0  # a split is "no"
    assert consensus([1, -1], "pairwise") == 0  # a vs b split is a tie
    assert consensus([2, 4, 4, 5]) == 4


def test_join_matches_ids_and_keeps_unscored(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "l.csv",
        "item_id,dimension,label,annotator\n"
        "q1@k1,faithfulness,1,a\nq1@k1,faithfulness,1,b\nq2@k1,faithfulness,0,a\n"
        "q1@k1|q2@k1,faithfulness_pair,a,a\n",
    )
    labels = load_labels(p)
    results = [
        _result("q1@k1", "faithfulness", 0.9),
        _result("q2@k1", "faithfulness", None),
        _result("q3@k1", "faithfulness", 0.2),
        _result("q1@k1", "faithfulness_pair", 0.8),
        _result("q2@k1", "faithfulness_pair", 0.3),
    ]
    joined = join_labels(labels, results)
    faith = {it.item_id: it for it in joined.items["faithfulness"]}
    assert faith["q1@k1"].human_values == [1.0, 1.0]
    assert faith["q2@k1"].judge_score is None and faith["q2@k1"].judge_status == "timeout"
    pair = joined.items["faithfulness_pair"][0]
    assert pair.judge_score == pytest.approx(0.5)
    assert joined.all_scores["faithfulness"]["q3@k1"] == 0.2


@pytest.mark.parametrize(
    ("row", "needle"),
    [
        ("q9@k1,faithfulness,1", "matches no judged item"),
        ("q1@k1,fluency,1", "matches no judge"),
        ("q2@k1,faithfulness,1", "has no result from judge"),
    ],
)
def test_join_errors_name_the_label_line(tmp_path: Path, row: str, needle: str) -> None:
    p = _write(tmp_path, "l.csv", f"item_id,dimension,label\nq1@k1,faithfulness,1\n{row}\n")
    results = [
        _result("q1@k1", "faithfulness", 0.9),
        _result("q2@k1", "answer_relevancy", 0.9),
    ]
    with pytest.raises(DataError, match=needle) as err:
        join_labels(load_labels(p), results)
    assert err.value.line == 3 and err.value.path == str(p)


def test_results_jsonl_reads_bare_and_wrapped_records(tmp_path: Path) -> None:
    r = _result("q1@k1", "faithfulness", 0.5)
    wrapped = {"case_id": "q1", "k": 1, "judge": "faithfulness", "result": r.model_dump()}
    p = _write(tmp_path, "r.jsonl", r.model_dump_json() + "\n" + json.dumps(wrapped) + "\n")
    assert from_results_file(p).results == [r, r]
    bad = _write(tmp_path, "bad.jsonl", r.model_dump_json() + '\n{"judge": "x"}\n')
    with pytest.raises(DataError, match="not a judge result") as err:
        from_results_file(bad)
    assert err.value.line == 2
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + r.model_dump_json().encode() + b"\n")
    assert from_results_file(bom).results == [r]
    bad.write_text(r.model_dump_json() + "\n[1, 2]\n")
    with pytest.raises(DataError, match="expected a JSON object") as err:
        from_results_file(bad)
    assert err.value.line == 2


def test_results_jsonl_reads_judge_command_rows(tmp_path: Path) -> None:
    row = {
        "id": "q1@k3",
        "case_id": "q1",
        "k": 3,
        "question": "Q?",
        "answer": "An answer.",
        "contexts": ["ctx one", "ctx two"],
        "reference": "Ref.",
        "generator": "extractive",
        "judges": {
            "faithfulness": {"score": 0.75, "status": "ok", "evidence": {}, "error": None,
                             "usage": {}, "backend": "offline", "version": "offline-1"},
            "completeness": {"score": None, "status": "timeout", "evidence": {},
                             "error": "slow", "usage": {}, "backend": "llm", "version": "x"},
        },
    }  # fmt: skip
    p = _write(tmp_path, "judged.jsonl", json.dumps(row) + "\n")
    data = from_results_file(p)
    by_judge = {r.judge: r for r in data.results}
    assert by_judge["faithfulness"].score == 0.75 and by_judge["faithfulness"].item_id == "q1@k3"
    assert by_judge["completeness"].status == JudgeStatus.timeout
    assert data.answers["q1@k3"].contexts == ["ctx one", "ctx two"]
    assert data.questions == {"q1": "Q?"} and data.references == {"q1": "Ref."}


def test_judge_rows_from_a_csv_read_back_with_their_contexts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A CSV cell holds the contexts as a JSON list: ``ragjudge judge`` writes them as a list,
    and the results reader reads an output row's fields as ``judge`` read them."""
    sheet = tmp_path / "rows.csv"
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "question", "answer", "contexts"])
        contexts = ["The tower was first lit in 1811.", "It has 24 lamps."]
        writer.writerow(["q1@k2", "When was it first lit?", "In 1811.", json.dumps(contexts)])
    out = tmp_path / "judged.jsonl"
    argv = ["judge", "--input", str(sheet), "--backend", "offline", "--judges", "faithfulness"]
    code, text = run_cli([*argv, "--output", str(out)], capsys)
    assert code == 0, text
    assert json.loads(out.read_text().splitlines()[0])["contexts"] == contexts
    assert from_results_file(out).answers["q1@k2"].contexts == contexts
    # a file written before the rows were normalised (the cell's JSON string) reads the same
    row = json.loads(out.read_text()) | {"contexts": json.dumps(contexts)}
    old = _write(tmp_path, "old.jsonl", json.dumps(row) + "\n")
    assert from_results_file(old).answers["q1@k2"].contexts == contexts


def test_a_label_file_may_start_with_a_byte_order_mark(tmp_path: Path) -> None:
    row = {"item_id": "q1@k1", "dimension": "faithfulness", "label": 1}
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_bytes(b"\xef\xbb\xbf" + json.dumps(row).encode() + b"\n")
    sheet = tmp_path / "labels.csv"
    sheet.write_bytes(b"\xef\xbb\xbfitem_id,dimension,label\nq1@k1,faithfulness,1\n")
    for path in (jsonl, sheet):
        assert [lab.item_id for lab in load_labels(path).labels] == ["q1@k1"]


def test_a_tsv_label_file_is_read_tab_separated(tmp_path: Path) -> None:
    """A spreadsheet saved as .tsv was read as CSV: one column named by the whole header
    line, refused as "missing column 'label'"; a note holding a comma is kept whole."""
    sheet = _write(
        tmp_path,
        "labels.tsv",
        "item_id\tdimension\tlabel\tnote\nq1@k1\tfaithfulness\t1\tfine, mostly\n"
        "q2@k1\tfaithfulness\t0\t\n",
    )
    labels = load_labels(sheet)
    assert [(lab.item_id, lab.value) for lab in labels.labels] == [("q1@k1", 1.0), ("q2@k1", 0.0)]
    assert labels.scales == {"faithfulness": "binary"}


def test_a_label_file_in_another_encoding_is_named(tmp_path: Path) -> None:
    sheet = tmp_path / "labels.csv"
    sheet.write_bytes("item_id,dimension,label\nq1@k1,faithfulness,1\n".encode("utf-16"))
    with pytest.raises(DataError, match=r"labels\.csv:1: not valid UTF-8"):
        load_labels(sheet)


@pytest.mark.parametrize(
    "text",
    [
        # a header cell with a quoted newline
        '"item_id","dimension","label","note\nmore"\nq1@k1,faith,1,\nq2@k1,faith,0,\nBAD@k1,faith,7,\n',
        # blank lines between rows
        "item_id,dimension,label\n\n\nq1@k1,faith,1\n\nq2@k1,faith,0\n\n\nBAD@k1,faith,7\n",
        # quoted newlines inside cells, Windows line ends
        'item_id,dimension,label,note\r\nq1@k1,faith,1,"a\r\nb\r\nc"\r\n'
        'q2@k1,faith,0,"d\ne"\r\n\r\nBAD@k1,faith,7,x\r\n',
        # blank lines before the header
        "\n\nitem_id,dimension,label\nq1@k1,faith,1\nq2@k1,faith,0\nBAD@k1,faith,7\n",
    ],
)
def test_csv_errors_name_the_physical_line(tmp_path: Path, text: str) -> None:
    """Every row's line is the physical line its first cell is on, counting the header's and
    the cells' own line breaks and blank lines (an editor's line number)."""
    p = tmp_path / "labels.csv"
    p.write_bytes(text.encode())
    physical = text.replace("\r\n", "\n").split("\n")
    want = next(i for i, t in enumerate(physical, 1) if t.startswith("BAD@"))
    with pytest.raises(DataError, match=r"label .7. is o") as err:
        load_labels(p)
    assert err.value.line == want
    good = p.with_name("good.csv")
    good.write_bytes(text.replace("BAD@k1,faith,7", "q3@k1,faith,1").encode())
    physical[want - 1] = "q3@k1"
    for lab in load_labels(good).labels:
        assert physical[lab.line - 1].startswith(lab.item_id)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("q1@k1,faith,1\nq2@k1,faith,0,extra\n", "4 fields"),
        ("q1@k1,faith,1\nq2@k1,faith\n", "2 fields"),
        ('q1@k1,faith,1\n"q2@k1\n",faith,0,,\n', "5 fields"),
    ],
)
def test_a_ragged_csv_row_is_refused(tmp_path: Path, body: str, needle: str) -> None:
    """A row with more or fewer cells than the header is an error naming its line (a cell
    shifted into the next column would otherwise be read as another column's value)."""
    p = _write(tmp_path, "labels.csv", "item_id,dimension,label\n" + body)
    with pytest.raises(DataError, match=needle) as err:
        load_labels(p)
    assert err.value.line == 3
    assert "the header has 3" in str(err.value)
