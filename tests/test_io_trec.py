"""TREC qrels and run files: round trips, the BEIR TSV variant, and malformed lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragjudge.errors import DataError
from ragjudge.io import read_trec_qrels, read_trec_run, write_trec_qrels, write_trec_run
from ragjudge.metrics import evaluate_run
from ragjudge.schema import Ranking, ScoredDoc


def test_qrels_round_trip_and_beir_tsv(tmp_path: Path) -> None:
    qrels = {"q1": {"d1": 3, "d2": 0}, "q2": {"d3": -1}}
    path = tmp_path / "q.trec"
    write_trec_qrels(qrels, path)
    assert path.read_text().splitlines()[0] == "q1 0 d1 3"
    assert read_trec_qrels(path) == qrels
    tsv = tmp_path / "test.tsv"
    tsv.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n\nq1\td2\t2\n")
    assert read_trec_qrels(tsv) == {"q1": {"d1": 1, "d2": 2}}


def test_run_round_trip_keeps_scores_exactly(tmp_path: Path) -> None:
    run = {"q1": {"a": 0.1 + 0.2, "b": 1e-17, "c": 0.1 + 0.2}, "q2": {"x": -3.0}}
    path = tmp_path / "run.trec"
    write_trec_run(run, path, tag="bm25")
    lines = path.read_text().splitlines()
    # Written in trec_eval order: score descending, ties by id descending.
    assert [line.split()[2] for line in lines[:3]] == ["c", "a", "b"]
    assert lines[0].split()[3:] == ["1", repr(0.1 + 0.2), "bm25"]
    assert read_trec_run(path) == run


def test_rankings_are_written_in_their_own_order(tmp_path: Path) -> None:
    ranking = Ranking(
        query_id="q", docs=[ScoredDoc(doc_id="b", score=0.2), ScoredDoc(doc_id="a", score=0.9)]
    )
    path = tmp_path / "r.trec"
    write_trec_run([ranking], path)
    assert [line.split()[2] for line in path.read_text().splitlines()] == ["b", "a"]
    write_trec_run({"q": ranking}, path)
    assert read_trec_run(path) == {"q": {"b": 0.2, "a": 0.9}}
    # Read back as a run, the scores (not the written ranks) decide the order, as in trec_eval.
    report = evaluate_run({"q": {"a": 1}}, read_trec_run(path), ks=[1], ci=False)
    assert report.per_query["q"]["precision@1"] == 1.0
    with pytest.raises(DataError, match="whitespace"):
        write_trec_run({"q": {"a b": 1.0}}, path)


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2 0.4\n", 2, "expected 6 columns"),
        ("q1 Q0 d1 1 high tag\n", 1, "score must be a number"),
        ("q1 Q0 d1 1 nan tag\n", 1, "finite"),
        ("q1 Q0 d1 one 0.5 tag\n", 1, "rank must be an integer"),
        ("# comment\nq1 Q0 d1 1 0.5 t\n\nq1 Q0 d1 2 0.4 t\n", 4, r"twice \(first at line 2\)"),
    ],
)
def test_malformed_run_lines_name_file_and_line(
    tmp_path: Path, content: str, line: int, message: str
) -> None:
    path = tmp_path / "bad.run"
    path.write_text(content)
    with pytest.raises(DataError, match=message) as info:
        read_trec_run(path)
    assert info.value.path == str(path)
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", 2, "expected 4 columns"),
        ("q1 0 d1 high\n", 1, "relevance must be an integer"),
        ("q1 0 d1 1\nq1 0 d1 2\n", 2, "judges document 'd1' twice"),
        ("q1 d1\n", 1, "4 columns"),
    ],
)
def test_malformed_qrels_lines_name_file_and_line(
    tmp_path: Path, content: str, line: int, message: str
) -> None:
    path = tmp_path / "bad.qrels"
    path.write_text(content)
    with pytest.raises(DataError, match=message) as info:
        read_trec_qrels(path)
    assert (info.value.path, info.value.line) == (str(path), line)


def test_missing_and_undecodable_files(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="file not found") as info:
        read_trec_run(tmp_path / "nope.trec")
    assert info.value.path == str(tmp_path / "nope.trec")
    with pytest.raises(DataError, match="not a file"):
        read_trec_qrels(tmp_path)
    bad = tmp_path / "latin1.trec"
    bad.write_bytes(b"q1 0 d1 1\nq1 0 caf\xe9 1\n")
    with pytest.raises(DataError, match="UTF-8") as info:
        read_trec_qrels(bad)
    assert info.value.line == 2
