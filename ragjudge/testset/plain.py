"""Plain prose of a passage, as the question templates read it: its sentences without markup,
and a heading or title line never glued to the sentence after it.

- Blocks: a passage is cut at blank lines, and after a line that does not end a sentence (no
  ``.``, ``!``, ``?``, ``:`` or ``;`` at its end) when it is a heading, a list item or a quote
  (by its mark), or a title: at most ``TITLE_WORDS`` words and followed by a line that starts
  with a capital. So "Honey\\nHoney is made by bees." is two blocks, not "Honey Honey is made
  ...", while prose wrapped across lines stays one block.
- Markup is removed from each line: Markdown heading marks, list bullets and numbers, quote
  marks, emphasis (``*x*``, ``**x**``, ``_x_``), inline code, links and images (their text is
  kept, the address dropped), bare URLs, HTML tags and entities; fenced code blocks, table rows
  and horizontal rules are dropped whole.
- ``sentences``: ``ragjudge.text.split_sentences`` of each block, without a leading section
  label of a structured abstract ("METHODS AND RESULTS Between ...", "Objectives To ...": words
  of ``SECTION_LABELS``, in capitals or capitalised, before a capitalised word).

``MARKUP`` finds what is left of markup in a text (for the ``form`` filter).
"""

from __future__ import annotations

import html
import re

from ragjudge.text import split_sentences

_FENCE = re.compile(r"^\s*(```|~~~)")
_RULE = re.compile(r"^\s*([-*_=])(\s*\1){2,}\s*$")
_TABLE = re.compile(r"^\s*\|.*\|\s*$|^\s*:?-{3,}:?\s*\|")
_LEAD = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+•]\s+|\d{1,3}[.)]\s+)+")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)|\[([^\]]+)\]\[[^\]]*\]")
_URL = re.compile(r"<?\b(?:https?://|www\.)\S+>?")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_CODE = re.compile(r"`+([^`]*)`+")
_EMPHASIS = re.compile(r"(\*{1,3}|_{1,3}|~~)(?=\S)(.+?)(?<=\S)\1")
_TRAILING_HASHES = re.compile(r"\s+#+\s*$")
_ENDS_SENTENCE = re.compile(r"[.!?:;][\"')\]]*$")
TITLE_WORDS = 10
SECTION_LABELS = frozenset(
    """abstract aim aims background conclusion conclusions context design discussion findings
    importance interpretation interventions introduction materials method methods methodology
    objective objectives outcome outcomes participants patients purpose rationale results
    setting settings significance summary""".split()
)
_CAPS_LABEL = re.compile(r"^(?:[A-Z]{2,}(?:\s+(?:AND|OF|&)\b)?[\s:.]+)+(?=[A-Z])")
_WORD_LABEL = re.compile(r"^(?P<label>[A-Z][a-z]+)(?:\s+and\s+[A-Z]?[a-z]+)?[:.]?\s+(?=[A-Z])")

MARKUP = re.compile(
    r"[#*_`|\\{}<>~^=]|\[|\]|\]\(|https?://|www\.|&[a-z]+;|&#\d+;|^\s*[-+>•]\s|\s[-+]\s*$"
)
"""Any of: a markup character (``# * _ ` | \\ { } < > ~ ^ = [ ]``), a URL, an HTML entity, a
list or quote mark at the start, a dangling dash at the end."""


def plain_line(line: str) -> str:
    """One line without its markup (module docstring)."""
    text = html.unescape(line)
    text = _LEAD.sub("", text)
    text = _TRAILING_HASHES.sub("", text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(lambda m: m[1] or m[2], text)
    text = _URL.sub("", text)
    text = _TAG.sub(" ", text)
    text = _CODE.sub(r"\1", text)
    for _ in range(2):  # nested emphasis: ***x*** and **_x_**
        text = _EMPHASIS.sub(r"\2", text)
    return " ".join(text.split())


def blocks(text: str) -> list[str]:
    """The passage's blocks of plain prose (module docstring)."""
    lines: list[tuple[str, bool]] = []  # (plain text or "" for a break, marked as a unit)
    fenced = False
    for raw in text.splitlines():
        if _FENCE.match(raw):
            fenced = not fenced
            lines.append(("", False))
        elif fenced or _RULE.match(raw) or _TABLE.match(raw):
            lines.append(("", False))
        else:
            lines.append((plain_line(raw), bool(_LEAD.match(raw))))
    out: list[str] = []
    current: list[str] = []
    for i, (line, marked) in enumerate(lines):
        if not line:
            if current:
                out.append(" ".join(current))
                current = []
            continue
        current.append(line)
        if _ENDS_SENTENCE.search(line):
            continue
        after = next((x for x, _ in lines[i + 1 :] if x), "")
        title = len(line.split()) <= TITLE_WORDS and after[:1].isupper()
        if marked or title:
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out


def _unlabel(sentence: str) -> str:
    text = sentence
    m = _CAPS_LABEL.match(text)
    if m is not None:
        words = {w.lower() for w in re.findall(r"[A-Z]+", m[0])} - {"and", "of"}
        if words <= SECTION_LABELS:
            text = text[m.end() :]
    m = _WORD_LABEL.match(text)
    if m is not None and m["label"].lower() in SECTION_LABELS:
        text = text[m.end() :]
    return text


def sentences(text: str) -> list[str]:
    """The sentences of the passage's plain prose, block by block (module docstring)."""
    out = []
    for block in blocks(text):
        for sentence in split_sentences(block):
            if sentence := _unlabel(sentence):
                out.append(sentence)
    return out
