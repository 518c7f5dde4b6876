"""The lexical filters and their scores (the embedding and judge filters are in ``build``).

- ``copy_score(question, passages)``: max over the passages' sentences (of 6+ tokens) of
  ``LCS(question tokens, sentence tokens) / sentence length``, LCS being the longest common
  subsequence. A question is a copy when it reaches ``COPY_THRESHOLD``: it repeats most of one
  sentence in the same order (a word moved, dropped or swapped does not hide it).
- ``leak_score(question, short_answer, reference)``: the share of the answer's key terms
  (content words and numbers of the short answer; of the reference when there is none) that
  the question already contains. A question answers itself at ``LEAK_THRESHOLD``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragjudge.text import content_words, numbers, split_sentences, tokens

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
