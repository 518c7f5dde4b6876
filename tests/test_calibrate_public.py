"""Public human-label sets load into judge inputs and valid label files (no judging here)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from ragjudge.calibrate.labels import load_labels
from ragjudge.calibrate.public import expertqa_support, haluquestqa, wikieval, write_labels


def test_wikieval_pairs(shared_data: Path, tmp_path: Path) -> None:
    data = wikieval(shared_data / "wikieval")
    assert {j: len(v) for j, v in data.inputs.items()} == {
        "faithfulness": 100,
        "answer_relevancy": 100,
        "context_precision": 100,
    }
    labels = load_labels(write_labels(data.labels, tmp_path / "w.csv"))
    assert set(labels.scales.values()) == {"pairwise"} and len(labels.labels) == 150
    # The preferred side is randomised, so both a and b occur.
    assert Counter(lab.raw for lab in labels.labels).keys() == {"a", "b"}
    faith = data.inputs["faithfulness"][0]
    assert faith.contexts and faith.answer
    assert len(data.inputs["context_precision"][0].contexts) > 1  # split into sentences


def test_expertqa_support_labels(shared_data: Path) -> None:
    data = expertqa_support(shared_data / "expertqa_val")
    counts = Counter(row.label for row in data.labels)
    # Complete vs Partial + Incomplete, with evidence text (URL-only citations left out)
    assert counts == {"1": 534, "0": 207}
    assert all(item.contexts for item in data.inputs["faithfulness"])


def test_haluquestqa_answers_and_preferences(shared_data: Path) -> None:
    data = haluquestqa(shared_data / "haluquestqa")
    assert len(data.inputs["completeness"]) == 1396
    flagged = Counter((r.dimension, r.label) for r in data.labels)
    assert flagged[("completeness", "0")] > 300 and flagged[("answer_relevancy", "0")] > 200
    prefs = haluquestqa(shared_data / "haluquestqa", preferences=True)
    assert {r.scale for r in prefs.labels} == {"pairwise"} and len(prefs.labels) == 2 * 698


def test_part_follows_the_offline_judges_split(shared_data: Path) -> None:
    whole = expertqa_support(shared_data / "expertqa_val")
    held = expertqa_support(shared_data / "expertqa_val", part="held_out")
    dev = expertqa_support(shared_data / "expertqa_val", part="dev")
    assert len(held.labels) + len(dev.labels) == len(whole.labels)
    assert 0.15 < len(held.labels) / len(whole.labels) < 0.45
    held_q = {i.question for i in held.inputs["faithfulness"]}
    dev_q = {i.question for i in dev.inputs["faithfulness"]}
    assert not held_q & dev_q  # split by question


def test_the_public_set_readers_name_the_file_and_line(tmp_path: Path) -> None:
    """One reader per file (``judges.offline.labelsets``), shared by the agreement analysis and
    the offline judges' fit: a bad record is an error at its line, never skipped or guessed."""
    from ragjudge.errors import DataError
    from ragjudge.judges.offline.labelsets import haluquestqa_rows, wikieval_pairs

    (tmp_path / "wikieval_pairs.jsonl").write_text(
        '{"id": "1", "dimension": "faithfulness", "question": "Q?", "preferred": "a", '
        '"rejected": "b", "context": "c"}\n\n{"id": "2", "dimension": "faithfulness"}\n'
    )
    with pytest.raises(DataError, match=r"wikieval_pairs\.jsonl:3: record has no 'question'"):
        wikieval(tmp_path)
    head = "question_text\tans1_text\tans2_text\tincomplete_ans_label\tirrelevance_label\n"
    sheet = tmp_path / "HaluQuestQA.csv"
    sheet.write_text(head + "Q?\tA one.\tA two.\t['answer2']\t\n")
    (row,) = haluquestqa_rows(tmp_path)
    assert row.incomplete == {"answer2"} and not row.irrelevant and row.answers[1] == "A two."
    assert [lab.label for lab in haluquestqa(tmp_path).labels] == ["1", "1", "1", "0"]
    sheet.write_text(head + "Q?\tA one.\tA two.\t['answer2'\t\n")
    with pytest.raises(DataError, match=r"HaluQuestQA\.csv:2: not a list of marked answers"):
        haluquestqa_rows(tmp_path)
    with pytest.raises(DataError, match=r"file not found"):
        wikieval_pairs(tmp_path / "missing")
