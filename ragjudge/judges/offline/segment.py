"""Segmentation for the offline judges: claims of an answer, units of a context, aspects of a
question, and detection of non-committal text.

- ``claims(text)``: the answer's sentences (citation markers such as ``[3]`` removed), each split
  at ``;`` and at a clause-joining ``, and`` / ``, but`` / ``, while`` / ``, whereas`` when both
  sides have at least four word tokens (a safe split: a list such as "red, green and blue" stays
  whole); also before ``and it`` / ``and she`` / ... (a new clause with its own subject).
  Questions, non-committal sentences and fragments of fewer than two content words are not
  claims.
- ``short_answer(text)``: an answer with no claim that still names something ("Rollo", "1844",
  "the 1970s"), or a fragment (``terse_answer``: "William the Conqueror", which has two
  content words and so would be a claim), is one claim, read with its question; a bare yes /
  no is not (the claim it makes is the question's, which the words alone do not state).
- ``terse_answer(text)``: a fragment answer ("Rollo", "the 10th century", "Duke Richard II"):
  at most ``TERSE_MAX_WORDS`` words, none of them a pronoun or an auxiliary verb (which make a
  sentence of it: "It is a tower."), not a question, not non-committal, naming something.
  Answer relevancy reads such an answer with its own model.
- ``context_units(chunk)``: the chunk's lines, each split into sentences (lists and tables in web
  or Wikipedia text are one item per line); URLs, citation markers and replacement characters
  removed; units of fewer than two word tokens dropped; run-ons cut at ``MAX_UNIT_WORDS``.
- ``question_aspects(question)``: the parts of a question that each ask for something: split at
  ``?``, ``;`` and at `` and `` / ``, `` before a new wh-word ("When and where ..., and what is
  the purpose ...?" -> two aspects; after `` and `` the wh-word may follow a preposition: "Who
  kept the light, and for how long?"), each with its expected answer type.
- ``is_non_committal(text)``: the text declines to answer ("I don't know", "cannot be
  determined", "no information", "I'm sorry, but I couldn't find ...", "the answer is
  unknown", a bare "Unknown."); "unknown" used as an adjective ("an unknown illness") is not
  an abstention.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ragjudge.text import content_words, split_sentences, tokens, word_matches

_CITATION = re.compile(r"\s*\[(?:\d+(?:\s*[,-]\s*\d+)*)\]")
_URL = re.compile(r"https?://\S+|www\.\S+")
_CLAUSE_SPLIT = re.compile(
    r"\s*;\s+|,\s+(?=(?:and|but|while|whereas)\s)"
    r"|\s+(?=and\s+(?:it|he|she|they|its|his|her|their|this|these)\s)",
    re.IGNORECASE,
)
_CONJ_HEAD = re.compile(r"^(?:and|but|while|whereas)\s+", re.IGNORECASE)

_NON_COMMITTAL = re.compile(
    r"\b(?:i\s+(?:do\s+not|don't|dont|cannot|can't|am\s+not\s+sure|'m\s+not\s+sure|am\s+unable|"
    r"'m\s+unable|could\s+not|couldn't|have\s+no)\b"
    r"|i'm\s+sorry|i\s+am\s+sorry|sorry,\s+but"
    r"|(?:cannot|can't|could\s+not|couldn't)\s+(?:be\s+)?(?:determined|determine|answer|find|say|"
    r"tell|know|confirm|provide)"
    r"|(?:no|not\s+enough|insufficient)\s+(?:specific\s+|relevant\s+|further\s+)?information"
    r"|(?:is|are|was|were)\s+not\s+(?:mentioned|specified|provided|stated|given|available|known)"
    r"|(?:do|does)\s+not\s+(?:mention|specify|say|state|provide|contain)"
    r"|no\s+answer|unclear\s+from|not\s+possible\s+to\s+(?:say|determine|know)"
    r"|(?:is|are|was|were|remains?|remained)\s+(?:still\s+|currently\s+|largely\s+)?unknown\b"
    r"|^\W*unknown\W*$)",
    re.IGNORECASE,
)

MAX_UNIT_WORDS = 48
"""Context units longer than this many words are cut into pieces of this size."""
MIN_CLAIM_WORDS = 2
"""A claim has at least this many content words ("It is not in Paris" has two)."""

_HEDGES = frozenset(
    """may might could possibly perhaps probably likely unlikely typically generally usually
    often sometimes some various several certain somewhat approximately around about roughly
    depends depending seems appears suggest suggests""".split()
)

_NEGATIONS = frozenset(
    """not no never none nobody nothing neither nor without cannot can't don't doesn't didn't
    isn't aren't wasn't weren't won't wouldn't shouldn't couldn't hasn't haven't hadn't
    fails failed lack lacks unable""".split()
)

_WH = ("how many", "how much", "how long", "how old", "how far", "what year", "which year")
_WH_WORDS = ("who", "whom", "whose", "when", "where", "why", "what", "which", "how")
_ASPECT_SPLIT = re.compile(
    r"\?\s*|;\s*|,?\s+and\s+(?=(?:(?:for|in|by|to|from|at|on|with|of|since|until|after|before)\s+)?"
    r"(?:who|whom|whose|when|where|why|what|which|how)\b)"
    r"|,\s+(?=(?:who|whom|whose|when|where|why|what|which|how)\b)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Aspect:
    """One part of a question and the kind of answer it expects.

    ``answer_type`` is one of ``person``, ``date``, ``place``, ``number``, ``reason``,
    ``manner``, ``entity``, ``yesno`` or ``open``.
    """

    text: str
    answer_type: str


def without_citations(text: str) -> str:
    """``text`` without ``[3]``-style citation markers (nothing else changes, line breaks
    included): how the judges read an answer's sentences, so "Bees dance. [1]" is the sentence
    "Bees dance." its context holds."""
    return _CITATION.sub("", text)


def strip_citations(text: str) -> str:
    """``text`` without ``[3]``-style citation markers and URLs, white space collapsed."""
    return " ".join(_URL.sub(" ", without_citations(text)).split())


def clean_context(text: str) -> str:
    """A context with replacement characters, URLs and citation markers removed."""
    text = text.replace("\ufffd?", " - ").replace("\ufffd", " ")
    return without_citations(_URL.sub(" ", text))


def is_non_committal(text: str) -> bool:
    """True when the text declines to answer (see the module docstring for the cues)."""
    return bool(_NON_COMMITTAL.search(text))


def hedge_rate(text: str) -> float:
    """Share of word tokens that are hedges ("may", "typically", "possibly", ...)."""
    toks = tokens(text)
    return sum(t in _HEDGES for t in toks) / len(toks) if toks else 0.0


@lru_cache(maxsize=65536)
def negated(text: str) -> bool:
    """True when the text contains a negation word."""
    return any(t in _NEGATIONS or t.endswith("n't") for t in tokens(text))


def _split_clauses(sentence: str) -> list[str]:
    parts = [p.strip(" ,") for p in _CLAUSE_SPLIT.split(sentence) if p and p.strip(" ,")]
    if len(parts) < 2:
        return [sentence]
    out: list[str] = []
    for part in parts:
        part = _CONJ_HEAD.sub("", part)
        if out and (len(tokens(part)) < 4 or len(tokens(out[-1])) < 4):
            out[-1] = f"{out[-1]}, {part}"
        else:
            out.append(part)
    return out


def claims(text: str) -> list[str]:
    """The claims of an answer (see the module docstring for the rules)."""
    out: list[str] = []
    for sentence in split_sentences(strip_citations(text)):
        if sentence.rstrip().endswith("?") or is_non_committal(sentence):
            continue
        for clause in _split_clauses(sentence):
            if len(content_words(clause)) >= MIN_CLAIM_WORDS:
                out.append(clause.rstrip())
    return out


_POLAR = frozenset({"yes", "no", "true", "false", "correct", "incorrect", "right", "wrong"})


def _names_something(text: str) -> bool:
    """``text`` (citations stripped) is neither a question nor non-committal, and has a content
    word other than yes / no / true / false: what a short or terse answer must be."""
    if text.endswith("?") or is_non_committal(text):
        return False
    return bool(set(content_words(text)) - _POLAR)


def short_answer(text: str) -> str | None:
    """The whole answer as one claim when it is a short answer (module docstring): a fragment
    (``terse_answer``), or an answer with no claim of its own that names something
    (``_names_something``). None otherwise."""
    text = strip_citations(text).strip()
    if terse_answer(text) or (not claims(text) and _names_something(text)):
        return text
    return None


TERSE_MAX_WORDS = 4
_SENTENCE_MARKERS = frozenset(
    """i you he she it we they me him her us them this these those there is are was were am be
    been being has have had do does did will would shall should can could may might must""".split()
)
_NAME_LIKE_MARKERS = frozenset({"may", "will", "us", "can"})
"""Markers that, capitalised, are usually a name or a month ("May 1844", "the US")."""


def _marks_sentence(word: str, first: bool) -> bool:
    """``word`` is a pronoun or auxiliary verb: in lower case anywhere, or capitalised as the
    first word unless it is usually a name there ("World War I", "May 1844" stay fragments)."""
    low = word.lower()
    if low not in _SENTENCE_MARKERS:
        return False
    return word == low or (first and low not in _NAME_LIKE_MARKERS)


def terse_answer(text: str) -> bool:
    """The answer is a fragment, not a sentence (module docstring)."""
    text = strip_citations(text).strip()
    words = [m.group(0) for m in word_matches(text)]
    if not words or len(words) > TERSE_MAX_WORDS:
        return False
    if any(_marks_sentence(w, i == 0) for i, w in enumerate(words)):
        return False
    return _names_something(text)


def reference_points(text: str) -> list[str]:
    """The claims of a reference answer; a short reference ("Paris", "42") is one point."""
    points = claims(text)
    if points:
        return points
    text = strip_citations(text).strip()
    return [text] if content_words(text) and not is_non_committal(text) else []


def context_units(chunk: str) -> list[str]:
    """The sentence-level units of a context chunk (see the module docstring)."""
    units: list[str] = []
    for line in clean_context(chunk).splitlines():
        for sentence in split_sentences(line):
            if len(tokens(sentence)) < 2:
                continue
            words = sentence.split()
            # a run-on "sentence" (a table row, a list without punctuation) is cut into pieces
            # of MAX_UNIT_WORDS words: it bounds the encoding cost and keeps units sentence-sized
            for start in range(0, len(words), MAX_UNIT_WORDS):
                units.append(" ".join(words[start : start + MAX_UNIT_WORDS]))
    return units


def answer_type(aspect: str) -> str:
    """The kind of answer a question part expects, from its wh-word."""
    low = " ".join(aspect.lower().split())
    for phrase in _WH:
        if phrase in low:
            return "date" if "year" in phrase else "number"
    first = next((w for w in tokens(low) if w in _WH_WORDS), None)
    if first in ("who", "whom", "whose"):
        return "person"
    if first == "when":
        return "date"
    if first == "where":
        return "place"
    if first == "why":
        return "reason"
    if first == "how":
        return "manner"
    if first in ("what", "which"):
        return "entity"
    head = tokens(low)[:1]
    if head and head[0] in (
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "should",
        "has",
        "have",
        "had",
    ):
        return "yesno"
    return "open"


def question_aspects(question: str) -> list[Aspect]:
    """The parts of a question (see the module docstring); at least one for any question. A
    new list each call (the aspects are frozen; a judge asks once per chunk, so they are kept)."""
    return list(_aspects(question))


@lru_cache(maxsize=4096)
def _aspects(question: str) -> tuple[Aspect, ...]:
    text = " ".join(strip_citations(question).split())
    parts = [p.strip(" ,.") for p in _ASPECT_SPLIT.split(text) if p and p.strip(" ,.")]
    merged: list[str] = []
    for part in parts:
        # "When and where will X be held" splits into "When" + "where will ..."; a part with no
        # content of its own belongs to the next one.
        if merged and len(content_words(merged[-1])) == 0:
            merged[-1] = f"{merged[-1]} and {part}"
        else:
            merged.append(part)
    if len(merged) > 1 and not content_words(merged[-1]):
        last = merged.pop()
        merged[-1] = f"{merged[-1]} {last}"
    if not merged:
        merged = [text] if text else []
    aspects: list[Aspect] = []
    for part in merged:
        kind = answer_type(part)
        aspects.append(Aspect(text=part, answer_type=kind))
        # "When and where ..." asks for two things in one clause.
        low = part.lower()
        if re.match(
            r"^(?:when|where|who|how|why|what)\s+and\s+(?:when|where|who|how|why|what)\b", low
        ):
            second = low.split()[2]
            aspects.append(Aspect(text=part, answer_type=answer_type(second + " " + part)))
    return tuple(aspects)
