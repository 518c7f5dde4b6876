"""Small text utilities shared by the generator and the offline judges.

- ``split_sentences``: rule-based sentence segmentation (terminal punctuation followed by space
  and an upper-case letter, digit or quote; common abbreviations and decimals kept intact).
- ``tokens``: lower-cased word tokens (letters, digits, inner hyphens and apostrophes).
- ``content_words``: tokens that are not stop words.
- ``numbers``: numeric tokens normalised (``1,000`` -> ``1000``; ``3.50`` -> ``3.5``).
"""

from __future__ import annotations

import re

_ABBREV = {
    "e.g",
    "i.e",
    "etc",
    "vs",
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "st",
    "no",
    "fig",
    "al",
    "approx",
    "inc",
    "ltd",
    "jr",
    "sr",
    "u.s",
    "u.k",
    "cf",
    "ca",
    "vol",
    "pp",
}
_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-'][A-Za-z0-9]+)*")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?")

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself nor of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours
    yourself yourselves also may might must shall one ones many much within without upon
    via per whether yet however thus""".split()
)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped, empty ones dropped."""
    text = " ".join(text.split())
    if not text:
        return []
    pieces = _SPLIT.split(text)
    out: list[str] = []
    for piece in pieces:
        if out:
            last_word = out[-1].rstrip(".!?\"')]").rsplit(" ", 1)[-1].lower()
            if last_word in _ABBREV or (len(last_word) == 1 and last_word.isalpha()):
                out[-1] = f"{out[-1]} {piece}"
                continue
        out.append(piece.strip())
    return [s for s in out if s]


def word_matches(text: str) -> list[re.Match[str]]:
    """The word tokens of ``text`` as matches (original case and position): runs of letters and
    digits, joined by inner hyphens or apostrophes ("sub-Saharan", "don't")."""
    return list(_TOKEN.finditer(text))


def tokens(text: str) -> list[str]:
    return [m.group(0).lower() for m in word_matches(text)]


def content_words(text: str) -> list[str]:
    return [t for t in tokens(text) if t not in STOP_WORDS and (len(t) > 1 or t.isdigit())]


def numbers(text: str) -> set[str]:
    out = set()
    for raw in _NUMBER.findall(text):
        n = raw.replace(",", "").lstrip("+")
        if "." in n:
            n = n.rstrip("0").rstrip(".")
        out.add(n)
    return out
