"""The lexical filters and their scores (the embedding and judge filters are in ``build``).

- ``copy_score(question, passages)``: max over the passages' sentences (of 6+ tokens) of
  ``LCS(question tokens, sentence tokens) / sentence length``, LCS being the longest common
  subsequence. A question is a copy when it reaches ``COPY_THRESHOLD``: it repeats most of one
  sentence in the same order (a word moved, dropped or swapped does not hide it).
- ``leak_score(question, short_answer, reference)``: the share of the answer's key terms
  (content words and numbers of the short answer; of the reference when there is none) that
  the question already contains. A question answers itself at ``LEAK_THRESHOLD``.
- ``form_problem(question, names)``: why a question is not one a person would ask, or None.
  A question starts with a capital and a question word (``QUESTION_STARTS``, or a preposition
  before "which"/"what"), ends with its only ``?`` with no punctuation before it, has 4 to
  ``MAX_QUESTION_WORDS`` words, balanced brackets and quotes, no word twice in a row, no
  markup (``plain.MARKUP``), no file name, and none of ``names``: the corpus's document ids
  and file names (``Names``), matched as whole words, case aside.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from itertools import pairwise
from pathlib import PurePosixPath

from ragjudge.text import content_words, numbers, split_sentences, tokens, word_matches

from .plain import MARKUP, SECTION_LABELS

COPY_THRESHOLD = 0.7
LEAK_THRESHOLD = 1.0


def lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (dynamic programming)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            cur[j] = prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1])
        prev = cur
    return prev[-1]


def copy_score(question: str, passages: Sequence[str]) -> float:
    q = tokens(question)
    best = 0.0
    for text in passages:
        for sent in split_sentences(text):
            s = tokens(sent)
            if len(s) >= 6:
                best = max(best, lcs(q, s) / len(s))
    return best


def key_terms(short_answer: str, reference: str) -> set[str]:
    """What an answer must say: the content words and numbers of the short answer (of the
    reference when there is no short answer)."""
    text = short_answer if short_answer.strip() else reference
    return set(content_words(text)) | numbers(text)


def leak_score(question: str, short_answer: str, reference: str) -> float:
    terms = key_terms(short_answer, reference)
    if not terms:
        return 1.0
    have = set(content_words(question)) | numbers(question)
    return len(terms & have) / len(terms)


QUESTION_STARTS = frozenset(
    """what which who whom whose when where why how is are was were do does did can could
    should would will has have had name list""".split()
)
MAX_QUESTION_WORDS = 45
_FILE_NAME = re.compile(
    r"\b[\w-]+\.(?:txt|md|markdown|rst|html?|xml|jsonl|ndjson|json|csv|tsv|pdf|docx?|ya?ml)\b",
    re.I,
)
_PREPOSITION_WH = re.compile(r"^[A-Z][a-z]*\s+(?:which|what|whom|whose)\b")
_BEFORE_MARK = re.compile(r"[\s.,;:!-]\?$")
_ID_SPAN = 4
"""Longest run of words an id or file name is looked for in."""


class Names:
    """The document ids and file names of a corpus (lower case): what no question may name."""

    def __init__(self, ids: Iterable[str]) -> None:
        found: set[str] = set()
        for raw in ids:
            for form in (raw, raw.split("#", 1)[0]):
                path = PurePosixPath(form)
                found.update(x.lower() for x in (form, path.name, path.stem) if len(x) > 1)
        self.names = found

    def named(self, text: str) -> str | None:
        """The first id or file name ``text`` holds as whole words, else None."""
        words = word_matches(text)
        for i in range(len(words)):
            for j in range(i, min(i + _ID_SPAN, len(words))):
                span = text[words[i].start() : words[j].end()].lower()
                if span in self.names:
                    return span
        return None


def form_problem(question: str, names: Names | None = None) -> str | None:
    """Why ``question`` is not well formed (module docstring), or None."""
    q = question.strip()
    words = q.split()
    if not 4 <= len(words) <= MAX_QUESTION_WORDS:
        return f"{len(words)} words"
    if not q.endswith("?") or q.count("?") != 1 or _BEFORE_MARK.search(q):
        return "not one question ending in '?'"
    first = words[0].strip("\"'").lower()
    if not q[0].isupper() or not (first in QUESTION_STARTS or _PREPOSITION_WH.match(q)):
        return "does not start with a question word"
    if MARKUP.search(q):
        return "markup"
    if _FILE_NAME.search(q):
        return "a file name"
    if q.count("(") != q.count(")") or q.count('"') % 2:
        return "unbalanced brackets or quotes"
    toks = tokens(q)
    if any(a == b for a, b in pairwise(toks)):
        return "a word twice in a row"
    if any(w.isupper() and w.lower() in SECTION_LABELS for w in words):
        return "a section label"
    if names is not None and (hit := names.named(q)) is not None:
        return f"names a document ({hit})"
    return None
