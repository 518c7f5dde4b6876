"""Integrity of the bundled demo set (datasets/demo): counts, ids, grades and grounding.

Reads the files with the standard library only (the loaders are tested elsewhere), and checks
every row against the boundary models of ``ragjudge.schema``.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from ragjudge.resources import demo_dir
from ragjudge.schema import Document, TestCase
from ragjudge.text import content_words

QUESTION_TYPES = {"factoid", "multi_passage", "list", "why", "unanswerable"}
TOPIC_PREFIX = {"lighthouses": "lh-", "bees": "hb-"}
GROUNDED = 0.5  # share of reference content words found in the answer passages


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        assert line.strip(), f"{path.name}:{n} is blank"
        rows.append(json.loads(line))
    return rows


@cache
def corpus() -> list[dict[str, Any]]:
    return _jsonl(demo_dir() / "corpus.jsonl")


@cache
def queries() -> list[dict[str, Any]]:
    return _jsonl(demo_dir() / "queries.jsonl")


@cache
def qrels_rows() -> list[tuple[str, str, int]]:
    with (demo_dir() / "qrels" / "test.tsv").open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        assert next(reader) == ["query-id", "corpus-id", "score"]
        return [(q, d, int(g)) for q, d, g in reader]


def qrels() -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for q, d, g in qrels_rows():
        out.setdefault(q, {})[d] = g
    return out


def readme_counts() -> dict[str, int]:
    """The ``| item | count |`` table of the README."""
    text = (demo_dir() / "README.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| ([a-z0-9_ ]+?) \| (\d+) \|$", text, flags=re.MULTILINE))
    return {k: int(v) for k, v in table.items()}


def test_readme_counts_match_files() -> None:
    claimed = readme_counts()
    qs = queries()
    grades = Counter(g for _, _, g in qrels_rows())
    actual = {
        "passages": len(corpus()),
        "lighthouse passages": sum(d["_id"].startswith("lh-") for d in corpus()),
        "bee passages": sum(d["_id"].startswith("hb-") for d in corpus()),
        "questions": len(qs),
        "answerable questions": sum(q["metadata"]["answerable"] for q in qs),
        "unanswerable questions": sum(not q["metadata"]["answerable"] for q in qs),
        "multi_passage questions": sum(q["metadata"]["type"] == "multi_passage" for q in qs),
        "qrels rows": len(qrels_rows()),
        **{f"qrels grade {g}": grades[g] for g in range(4)},
    }
    assert claimed == actual


def test_sizes_within_the_brief() -> None:
    c = readme_counts()
    assert 240 <= c["passages"] <= 300
    assert 48 <= c["questions"] <= 60
    assert c["unanswerable questions"] >= 6
    assert c["multi_passage questions"] >= 8
    total = sum(p.stat().st_size for p in demo_dir().rglob("*") if p.is_file())
    assert total < 1_000_000


def test_ids_unique_and_texts_nonempty() -> None:
    doc_ids = [d["_id"] for d in corpus()]
    query_ids = [q["_id"] for q in queries()]
    assert len(set(doc_ids)) == len(doc_ids)
    assert len(set(query_ids)) == len(query_ids)
    for d in corpus():
        assert d["title"].strip() and d["text"].strip(), d["_id"]
        assert 40 <= len(d["text"].split()) <= 120, d["_id"]
        assert d["_id"][:3] in TOPIC_PREFIX.values(), d["_id"]
    for q in queries():
        assert q["text"].strip().endswith("?"), q["_id"]


def test_rows_validate_as_schema_models() -> None:
    rel = qrels()
    docs = [Document(id=d["_id"], title=d["title"], text=d["text"]) for d in corpus()]
    cases = [
        TestCase(
            id=q["_id"],
            question=q["text"],
            reference=q["reference"],
            relevant=rel.get(q["_id"], {}),
            metadata=q["metadata"],
        )
        for q in queries()
    ]
    assert len(docs) == len(corpus()) and len(cases) == len(queries())
    for q in queries():
        assert set(q) == {"_id", "text", "reference", "metadata"}, q["_id"]
        meta = q["metadata"]
        assert meta["type"] in QUESTION_TYPES and meta["topic"] in TOPIC_PREFIX, q["_id"]
        assert meta["answerable"] is (meta["type"] != "unanswerable"), q["_id"]


def test_qrels_name_known_ids_with_valid_grades() -> None:
    doc_ids = {d["_id"] for d in corpus()}
    query_ids = {q["_id"] for q in queries()}
    rows = qrels_rows()
    assert len({(q, d) for q, d, _ in rows}) == len(rows), "duplicate qrels pair"
    for q, d, g in rows:
        assert q in query_ids and d in doc_ids, (q, d)
        assert 0 <= g <= 3, (q, d, g)


def test_unanswerable_questions_have_no_relevant_passages() -> None:
    rel = qrels()
    for q in queries():
        if not q["metadata"]["answerable"]:
            assert q["reference"] is None, q["_id"]
            assert all(g == 0 for g in rel.get(q["_id"], {}).values()), q["_id"]


def test_answerable_questions_have_reference_and_answer_passages() -> None:
    rel = qrels()
    for q in queries():
        if not q["metadata"]["answerable"]:
            continue
        assert q["reference"] and q["reference"].strip(), q["_id"]
        grades = Counter(rel.get(q["_id"], {}).values())
        assert grades[3] >= 1 or grades[2] >= 2, q["_id"]
        prefix = TOPIC_PREFIX[q["metadata"]["topic"]]
        assert all(d.startswith(prefix) for d in rel[q["_id"]]), q["_id"]


def test_multi_passage_questions_need_several_passages() -> None:
    rel = qrels()
    for q in queries():
        if q["metadata"]["type"] == "multi_passage":
            grades = Counter(rel[q["_id"]].values())
            assert grades[3] == 0 and grades[2] >= 2, q["_id"]


def _grounded_share(reference: str, doc_ids: list[str]) -> float:
    """Share of the reference's content words that occur in the given passages."""
    text = {d["_id"]: f"{d['title']} {d['text']}" for d in corpus()}
    support = {w for doc_id in doc_ids for w in content_words(text[doc_id])}
    words = content_words(reference)
    return sum(w in support for w in words) / len(words)


def _answer_passages(query_id: str) -> list[str]:
    return [d for d, g in qrels()[query_id].items() if g >= 2]


def test_references_are_grounded_in_their_passages() -> None:
    """A majority of each reference's content words occur in its grade >= 2 passages."""
    for q in queries():
        if q["metadata"]["answerable"]:
            share = _grounded_share(q["reference"], _answer_passages(q["_id"]))
            assert share > GROUNDED, (q["_id"], share)


def test_grounding_check_rejects_mismatched_passages() -> None:
    """The same check fails when each reference is paired with another question's passages."""
    answerable = [q for q in queries() if q["metadata"]["answerable"]]
    shifted = answerable[1:] + answerable[:1]
    passed = [
        q["_id"]
        for q, other in zip(answerable, shifted, strict=True)
        if _grounded_share(q["reference"], _answer_passages(other["_id"])) > GROUNDED
    ]
    assert len(passed) <= len(answerable) // 10, passed
