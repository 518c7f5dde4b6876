"""``ragjudge testset`` bounds its work per document (issue #30, 11): one multi-MB file took
285 s for 30 questions (every one of its thousands of passages was encoded); questions are now
asked about at most ``MAX_PASSAGES_PER_DOCUMENT`` passages of a document, spread over it, and a
note says what was cut."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest

from ragjudge.cli import main
from ragjudge.resources import demo_dir
from ragjudge.testset.corpus import MAX_PASSAGES_PER_DOCUMENT, load_corpus


def _big_document(path: Path, megabytes: float) -> Path:
    """Paragraphs of 3-8 sentences drawn from the demo corpus, ``megabytes`` in all."""
    docs = [json.loads(line) for line in (demo_dir() / "corpus.jsonl").open()]
    sentences = [s.strip() + "." for d in docs for s in d["text"].split(".") if len(s.split()) > 4]
    rng = random.Random(0)
    paragraphs, size = [], 0
    while size < megabytes * 1e6:
        para = " ".join(rng.choice(sentences) for _ in range(rng.randint(3, 8)))
        paragraphs.append(para)
        size += len(para) + 2
    path.write_text("\n\n".join(paragraphs), encoding="utf-8")
    return path


def test_a_multi_megabyte_document_is_bounded_and_says_what_was_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    book = _big_document(tmp_path / "book.txt", 3.0)
    corpus = load_corpus(book)
    asked = corpus.usable()
    assert len(corpus.documents) > 20 * MAX_PASSAGES_PER_DOCUMENT  # every passage is kept...
    assert len(asked) == MAX_PASSAGES_PER_DOCUMENT  # ... but questions come from a bounded few
    starts = [int(d.metadata["start_index"]) for d in asked]
    assert starts[0] < 10_000 and starts[-1] > 2_900_000  # spread over the whole document

    began = time.process_time()  # CPU time: the machine's other load does not count
    with pytest.raises(SystemExit) as done:
        main(["testset", "--corpus", str(book), "--n", "30", "--out", str(tmp_path / "ts")])
    seconds = time.process_time() - began
    out = capsys.readouterr()
    assert done.value.code in (0, None), out.err
    text = " ".join((out.out + out.err).split())
    note = re.search(
        r"at most (\d+) passages of one document, spread evenly over it; cut: (.*)", text
    )
    assert note is not None, text
    assert int(note[1]) == MAX_PASSAGES_PER_DOCUMENT
    cut = re.match(r"book \(([\d,]+) passages, ([\d,]+) characters\)", note[2])
    assert cut is not None, note[2]
    assert int(cut[1].replace(",", "")) > 20 * MAX_PASSAGES_PER_DOCUMENT
    assert int(cut[2].replace(",", "")) > 2_900_000
    assert seconds < 90, f"{seconds:.0f} CPU s for 30 questions from a 3 MB file"
    rows = (tmp_path / "ts" / "queries.jsonl").read_text().splitlines()
    assert len(rows) >= 20
