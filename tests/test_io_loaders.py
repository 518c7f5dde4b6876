"""Loaders: documents and cases from JSONL/CSV, BEIR and ragjudge test-set folders, SQuAD,
chunking and the dataset hash. Every bad input is a DataError naming file and line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragjudge.errors import ConfigError, DataError
from ragjudge.io import (
    DataWarning,
    chunk_documents,
    dataset_hash,
    load_beir,
    load_cases,
    load_documents,
    load_squad,
    load_testset,
    parent_map,
)
from ragjudge.resources import datasets_dir
from ragjudge.schema import Document, TestSet


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _raises_at(path: Path, line: int | None, message: str) -> pytest.RaisesContext[DataError]:
    return pytest.raises(DataError, match=f"^{re.escape(str(path))}:{line}: .*{message}")


def test_documents_from_jsonl_autodetect_fields(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "c.jsonl",
        [
            {"_id": 1, "title": "T", "text": "alpha", "lang": "en"},
            {"_id": "2", "text": "beta", "metadata": {"src": "x"}},
        ],
    )
    docs = load_documents(path)
    assert [d.id for d in docs] == ["1", "2"]
    assert docs[0].title == "T" and docs[1].title == ""
    assert docs[0].metadata == {"lang": "en"}
    assert docs[1].metadata == {"src": "x"}
    assert load_documents(path, extra="ignore")[0].metadata == {}


def test_documents_from_csv_with_named_fields(tmp_path: Path) -> None:
    path = tmp_path / "docs.csv"
    path.write_text('pid,heading,body\nA,"Title, with comma","multi\nline body"\nB,,second\n')
    docs = load_documents(path, id_field="pid", text_field="body", title_field="heading")
    assert [(d.id, d.title, d.text) for d in docs] == [
        ("A", "Title, with comma", "multi\nline body"),
        ("B", "", "second"),
    ]
    tsv = tmp_path / "docs.tsv"
    tsv.write_text("doc_id\ttext\nx\thello\n")
    assert load_documents(tsv)[0].id == "x"


def test_document_errors_name_file_and_line(tmp_path: Path) -> None:
    dup = _jsonl(
        tmp_path / "dup.jsonl",
        [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}, {"id": "a", "text": "z"}],
    )
    with _raises_at(dup, 3, r"duplicate document id 'a' \(first at line 1\)"):
        load_documents(dup)
    empty = _jsonl(tmp_path / "empty.jsonl", [{"id": "a", "text": "x"}, {"id": "b", "text": "  "}])
    with _raises_at(empty, 2, "empty text"):
        load_documents(empty)
    with pytest.warns(DataWarning, match="1 documents with an empty text were skipped"):
        assert [d.id for d in load_documents(empty, skip_empty=True)] == ["a"]
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"id": "a", "text": "x"}\n\n{"id": "b", "text": \n')
    with _raises_at(bad_json, 3, "malformed JSON"):
        load_documents(bad_json)
    not_obj = _jsonl(tmp_path / "list.jsonl", [{"id": "a", "text": "x"}])
    not_obj.write_text(not_obj.read_text() + "[1, 2]\n")
    with _raises_at(not_obj, 2, "expected a JSON object"):
        load_documents(not_obj)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("id,text\na,x\nb,y,extra\n")
    with _raises_at(ragged, 3, "row has 3 fields, the header has 2"):
        load_documents(ragged)
    with pytest.raises(DataError, match="file not found"):
        load_documents(tmp_path / "missing.jsonl")
    (tmp_path / "docs.xml").write_text("<docs/>")
    with pytest.raises(DataError, match=r"unknown file type '\.xml'"):
        load_documents(tmp_path / "docs.xml")


def test_unknown_fields_are_errors(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", [{"key": "a", "body": "x", "note": 1}])
    with _raises_at(path, 1, r"no id field: looked for \['_id', 'id'"):
        load_documents(path)
    with _raises_at(path, 1, "no field 'passage' for the text"):
        load_documents(path, id_field="key", text_field="passage")
    with _raises_at(path, 1, r"unknown field\(s\) \['note'\]"):
        load_documents(path, id_field="key", text_field="body", extra="forbid")
    later = _jsonl(tmp_path / "later.jsonl", [{"id": "a", "text": "x"}, {"id": "b", "body": "y"}])
    with _raises_at(later, 2, "row has no field 'text'"):
        load_documents(later)


def test_cases_with_references_and_graded_relevance(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path / "cases.jsonl",
        [
            {
                "id": "c1",
                "question": "Why?",
                "reference": "Because.",
                "relevant": {"d1": 3, "d2": 1},
            },
            {"id": "c2", "question": "Who?", "reference": None, "relevant": ["d3"]},
            {"id": "c3", "question": "What?", "answer": ["first", "second"]},
        ],
    )
    cases = load_cases(path)
    assert cases[0].relevant == {"d1": 3, "d2": 1} and cases[0].reference == "Because."
    assert cases[1].relevant == {"d3": 1} and cases[1].reference is None
    # The reference field is detected from the first row ("reference"), so c3's "answer" is
    # metadata: field names are fixed per file.
    assert cases[2].reference is None and cases[2].metadata == {"answer": ["first", "second"]}
    csv_path = tmp_path / "cases.csv"
    csv_path.write_text(
        'qid,query,gold_answer,relevant\nq1,Where?,Here,d1:2;d2\nq2,When?,,"{""d3"": 1}"\n'
    )
    cases = load_cases(csv_path)
    assert [(c.id, c.reference, c.relevant) for c in cases] == [
        ("q1", "Here", {"d1": 2, "d2": 1}),
        ("q2", None, {"d3": 1}),
    ]
    bad = _jsonl(
        tmp_path / "bad.jsonl", [{"id": "c1", "question": "Q", "relevant": {"d1": "high"}}]
    )
    with _raises_at(bad, 1, "grade of 'd1' must be an integer"):
        load_cases(bad)
    dup = _jsonl(
        tmp_path / "dup.jsonl", [{"id": "c", "question": "Q"}, {"id": "c", "question": "R"}]
    )
    with _raises_at(dup, 2, "duplicate case id 'c'"):
        load_cases(dup)
    empty_q = _jsonl(tmp_path / "emptyq.jsonl", [{"id": "c", "question": ""}])
    with _raises_at(empty_q, 1, "empty or non-text question"):
        load_cases(empty_q)


def _write_testset(root: Path, *, with_reference: bool = True) -> Path:
    _jsonl(
        root / "corpus.jsonl",
        [
            {"_id": "p1", "title": "Tides", "text": "Tides are caused by the moon."},
            {"_id": "p2", "title": "Tides", "text": "Spring tides follow new and full moons."},
            {"_id": "p3", "title": "Waves", "text": "Wind raises waves."},
        ],
    )
    queries = [
        {
            "_id": "q1",
            "text": "What causes tides?",
            "reference": "The moon.",
            "metadata": {"kind": "fact"},
        },
        {
            "_id": "q2",
            "text": "When are spring tides?",
            "reference": "At new and full moon.",
            "metadata": {},
        },
        {
            "_id": "q3",
            "text": "Who built the pyramids?",
            "reference": None,
            "metadata": {"kind": "unanswerable"},
        },
    ]
    if not with_reference:
        queries = [{k: v for k, v in q.items() if k != "reference"} for q in queries]
    _jsonl(root / "queries.jsonl", queries)
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\tp1\t3\nq1\tp2\t1\nq2\tp2\t3\nq2\tp3\t0\n"
    )
    return root


def test_load_testset_keeps_unanswerable_questions(tmp_path: Path) -> None:
    ts = load_testset(_write_testset(tmp_path / "tiny"))
    assert ts.name == "tiny"
    assert [d.id for d in ts.documents] == ["p1", "p2", "p3"]
    by_id = {c.id: c for c in ts.cases}
    assert by_id["q1"].relevant == {"p1": 3, "p2": 1}
    assert by_id["q1"].reference == "The moon." and by_id["q1"].metadata == {"kind": "fact"}
    assert by_id["q2"].relevant == {"p2": 3, "p3": 0}
    assert by_id["q3"].relevant == {} and by_id["q3"].reference is None
    assert set(ts.qrels()) == {"q1", "q2"}


def test_load_beir_drops_unjudged_queries_and_unknown_ids(tmp_path: Path) -> None:
    root = _write_testset(tmp_path / "beir", with_reference=False)
    qrels = root / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q1\tghost\t2\nq9\tp1\t1\n")
    with pytest.warns(DataWarning) as record:
        ts = load_beir(root)
    messages = [str(w.message) for w in record]
    assert any("1 qrels queries are not in queries.jsonl" in m and "'q9'" in m for m in messages)
    assert any(
        "1 qrels documents are not in corpus.jsonl" in m and "'ghost'" in m for m in messages
    )
    assert any("1 queries have no judgments in split 'test'" in m for m in messages)
    assert [c.id for c in ts.cases] == ["q1", "q2"]
    assert ts.cases[0].relevant == {"p1": 3, "p2": 1}
    with pytest.raises(DataError, match=r"missing qrels/dev\.tsv"):
        load_beir(root, split="dev")
    with pytest.raises(DataError, match="folder not found"):
        load_beir(tmp_path / "nothing")


def test_testset_bad_reference_is_located(tmp_path: Path) -> None:
    root = _write_testset(tmp_path / "bad")
    _jsonl(root / "queries.jsonl", [{"_id": "q1", "text": "Q?", "reference": 42}])
    with _raises_at(root / "queries.jsonl", 1, "reference of case 'q1' must be a string"):
        load_testset(root)


def test_dataset_hash_is_content_only_and_order_free(tmp_path: Path) -> None:
    ts = load_testset(_write_testset(tmp_path / "h"))
    shuffled = TestSet(name="other", documents=ts.documents[::-1], cases=ts.cases[::-1])
    assert dataset_hash(ts) == dataset_hash(shuffled)
    assert re.fullmatch(r"[0-9a-f]{64}", dataset_hash(ts))
    changed_doc = ts.documents[0].model_copy(update={"text": "Tides are caused by the Moon."})
    edited = TestSet(name=ts.name, documents=[changed_doc, *ts.documents[1:]], cases=ts.cases)
    assert dataset_hash(edited) != dataset_hash(ts)


def test_chunking_keeps_a_chunk_to_document_map() -> None:
    text = " ".join(f"Sentence number {i} talks about tides." for i in range(40))
    docs = [Document(id="long", text=text, title="T"), Document(id="short", text="Brief.")]
    chunks = chunk_documents(docs, chunk_size=200, chunk_overlap=40)
    long_chunks = [c for c in chunks if c.parent_id == "long"]
    assert len(long_chunks) > 5
    assert [c.id for c in long_chunks] == [f"long#{i}" for i in range(len(long_chunks))]
    assert all(len(c.text) <= 200 and c.title == "T" for c in long_chunks)
    for c in long_chunks:
        start = c.metadata["start_index"]
        assert text[start : start + len(c.text)] == c.text
    assert [c.id for c in chunks if c.parent_id == "short"] == ["short#0"]
    assert parent_map(chunks)["long#3"] == "long"
    with pytest.raises(ConfigError):
        chunk_documents(docs, chunk_size=100, chunk_overlap=100)


def test_load_squad_v2_subset(shared_data: Path) -> None:
    folder = shared_data / "squad_v2_dev_subset"
    ts = load_squad(folder / "dev-v2.0-first5articles.json")
    assert len(ts.documents) == 173 and len(ts.cases) == 1407
    answerable = [c for c in ts.cases if c.reference is not None]
    assert len(answerable) == 705
    # Paragraph ids and gold paragraphs agree with the prepared files of the shared folder.
    shared_ids = [json.loads(line)["doc_id"] for line in (folder / "corpus.jsonl").open()]
    assert [d.id for d in ts.documents] == shared_ids
    gold = {
        (q := json.loads(line))["id"]: q["gold_doc_id"]
        for line in (folder / "questions.jsonl").open()
    }
    for case in answerable:
        assert case.relevant == {gold[case.id]: 1}
        assert case.reference in ts.doc_index()[gold[case.id]].text
    impossible = [c for c in ts.cases if c.reference is None]
    assert all(c.relevant == {} and c.metadata["is_impossible"] for c in impossible)


def test_load_squad_v1_and_errors(tmp_path: Path) -> None:
    v1 = {
        "version": "1.1",
        "data": [
            {
                "title": "Moon",
                "paragraphs": [
                    {
                        "context": "The Moon orbits Earth.",
                        "qas": [
                            {
                                "id": "a",
                                "question": "What orbits Earth?",
                                "answers": [{"text": "The Moon", "answer_start": 0}],
                            }
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(v1))
    ts = load_squad(path)
    assert ts.cases[0].reference == "The Moon" and ts.cases[0].relevant == {"Moon_0": 1}
    v1["data"][0]["paragraphs"][0]["context"] = ""
    path.write_text(json.dumps(v1))
    with pytest.raises(DataError, match=r"data\[0\]\.paragraphs\[0\]: empty or missing context"):
        load_squad(path)
    path.write_text("{not json")
    with pytest.raises(DataError, match="malformed JSON"):
        load_squad(path)


def test_bundled_demo_set_loads_when_present() -> None:
    try:
        demo = datasets_dir() / "demo"
    except FileNotFoundError:
        pytest.skip("no bundled datasets folder")
    if not all((demo / f).exists() for f in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")):
        pytest.skip("datasets/demo/ is not written yet")
    ts = load_testset(demo)
    assert len(ts.cases) >= 40
    doc_ids = {d.id for d in ts.documents}
    assert all(set(c.relevant) <= doc_ids for c in ts.cases)
    assert any(not c.relevant and c.reference is None for c in ts.cases)
    assert all(0 <= g <= 3 for c in ts.cases for g in c.relevant.values())


def test_a_folder_corpus_is_the_same_file_for_the_test_set_and_the_generator(tmp_path):
    """corpus.jsonl before corpus.jsonl.gz, for the sweep's reader and ``ragjudge testset``."""
    import gzip

    from ragjudge.io.beir import find_folder_file
    from ragjudge.testset.corpus import load_corpus

    (tmp_path / "corpus.jsonl").write_text('{"_id": "plain", "text": "The plain file."}\n')
    with gzip.open(tmp_path / "corpus.jsonl.gz", "wt") as fh:
        fh.write('{"_id": "zipped", "text": "The gzipped file."}\n')
    assert find_folder_file(tmp_path, "corpus.jsonl") == tmp_path / "corpus.jsonl"
    assert [d.id for d in load_corpus(tmp_path).documents] == ["plain"]
    (tmp_path / "corpus.jsonl").unlink()
    assert [d.id for d in load_corpus(tmp_path).documents] == ["zipped"]
    assert find_folder_file(tmp_path, "queries.jsonl") is None


def test_a_test_set_without_judgments_says_retrieval_cannot_be_scored(tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "text": "A passage."}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "A question?"}\n')
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    with pytest.warns(DataWarning, match=r"test\.tsv: no query has a judged document"):
        ts = load_testset(tmp_path)
    assert [c.id for c in ts.cases] == ["q1"]
