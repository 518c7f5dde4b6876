"""Offline test sets a person would keep (issue #30, 19), measured over the WHOLE output, not a
sample: the requested count is delivered (or a note says why not); no question holds a document
id, a file name or a markup fragment; each question is one well-formed question; and each
reference answer is found in its source passages. On the demo corpus, on a folder of Markdown
files (headings, emphasis, links, lists, tables, file names in the text) and on SciFact
(``/work/shared/data``, skipped when absent)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from ragjudge.resources import demo_dir
from ragjudge.testset import build_testset
from ragjudge.testset.models import UNANSWERABLE_REFERENCE

SCIFACT = Path("/work/shared/data/scifact")
N = 30
QUESTION_WORDS = {"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is",
                  "are", "was", "were", "do", "does", "did", "in", "on", "at", "for", "from",
                  "by", "to", "during"}  # fmt: skip
MARKUP_CHARS = set("#*_`|<>[]{}\\=~^")
FILE_NAME = re.compile(r"\b[\w-]+\.(txt|md|markdown|rst|html?|jsonl|json|csv|tsv|pdf)\b", re.I)


def _words(text: str) -> str:
    """Lower-case words and numbers, single-spaced, without link addresses or markup."""
    text = re.sub(r"\]\([^)]*\)|https?://\S+", " ", text)
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def _markdown_folder(root: Path) -> Path:
    """The demo passages as Markdown files: a heading (the title), emphasis, a link, a list,
    a table, and a sentence naming another file."""
    docs = [json.loads(line) for line in (demo_dir() / "corpus.jsonl").open()]
    for i, d in enumerate(docs[:120]):
        sub = root / ("notes" if i % 2 else "pages")
        sub.mkdir(parents=True, exist_ok=True)
        text = d["text"]
        first, _, rest = text.partition(". ")
        body = (
            f"# {d['title']}\n\n**{first}.** {rest}\n\n"
            f"See [the source](https://example.org/{d['_id']}) and `{d['_id']}.md`.\n\n"
            "- first point\n- second point\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
        )
        (sub / f"{d['_id']}.md").write_text(body, encoding="utf-8")
    return root


def _corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {"demo": demo_dir(), "markdown": _markdown_folder(tmp_path_factory.mktemp("md"))}


@pytest.fixture(
    scope="module",
    params=["demo", "markdown", pytest.param("scifact", marks=pytest.mark.slow)],
)
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    if request.param == "scifact":
        if not (SCIFACT / "corpus.jsonl").is_file():
            pytest.skip("SciFact is not in /work/shared/data")
        corpus = SCIFACT
    else:
        corpus = _corpora(tmp_path_factory)[request.param]
    out = tmp_path_factory.mktemp(f"ts-{request.param}") / "set"
    build = build_testset(corpus, N, out=out, backend="offline", seed=0)
    return request.param, build, out


def test_the_requested_count_is_delivered_or_a_note_says_why(built) -> None:
    name, build, _ = built
    kept = len(build.items)
    assert kept == N or any(n.startswith(f"kept {kept} of {N}") for n in build.manifest.notes), (
        name,
        kept,
        build.manifest.notes,
    )
    assert kept == N, f"{name}: {kept} of {N}"  # these corpora are large enough


def test_every_question_is_well_formed_and_names_no_document(built) -> None:
    name, build, out = built
    corpus = [json.loads(line) for line in (out / "corpus.jsonl").open()]
    names = set()
    for d in corpus:
        for form in (d["_id"], d["_id"].split("#")[0]):
            names |= {form.lower(), Path(form).name.lower(), Path(form).stem.lower()}
    bad = []
    for it in build.items:
        q = it.candidate.question
        words = q.split()
        problems = []
        if not (q.endswith("?") and q.count("?") == 1 and q[0].isupper()):
            problems.append("not one question")
        if re.search(r"[\s.,;:]\?$", q):
            problems.append("punctuation before ?")
        if words[0].lower() not in QUESTION_WORDS:
            problems.append("no question word")
        if MARKUP_CHARS & set(q) or "http" in q or "www." in q:
            problems.append("markup")
        if FILE_NAME.search(q):
            problems.append("file name")
        padded = _words(q)
        hits = [
            n for n in names if len(n) > 1 and f" {' '.join(re.findall('[a-z0-9]+', n))} " in padded
        ]
        if hits:
            problems.append(f"document id {hits[:3]}")
        toks = re.findall(r"[a-z0-9']+", q.lower())
        if any(a == b for a, b in itertools.pairwise(toks)):
            problems.append("word twice")
        if q.count("(") != q.count(")") or not 4 <= len(words) <= 45:
            problems.append("brackets or length")
        if problems:
            bad.append((q, problems))
    assert not bad, f"{name}: {len(bad)} of {len(build.items)}: {bad[:5]}"


def test_every_reference_is_found_in_its_source_passages(built) -> None:
    name, build, out = built
    text = {
        (d := json.loads(line))["_id"]: _words(d.get("title", "") + " " + d["text"])
        for line in (out / "corpus.jsonl").open()
    }
    qrels = [line.split("\t") for line in (out / "qrels" / "test.tsv").read_text().splitlines()]
    assert all(row[1] in text for row in qrels[1:] if row[0] != "query-id")
    bad = []
    for it in build.items:
        c = it.candidate
        if c.qtype == "unanswerable":
            assert c.reference == UNANSWERABLE_REFERENCE and not it.relevant
            continue
        sources = "".join(text[s] for s in c.sources)
        parts = [p for p in c.short_answer.split(";") if p.strip()]
        refs = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", c.reference)
        refs = [r for r in refs if not r.startswith("So the answer is")]
        missing = [p for p in parts + refs if _words(p) not in sources]
        if not parts or missing:
            bad.append((c.question, missing))
        assert all(it.relevant.get(s) == 3 for s in c.sources)
    assert not bad, f"{name}: {len(bad)} of {len(build.items)}: {bad[:5]}"
