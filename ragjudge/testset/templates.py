"""Template questions from passage sentences: the offline backend (no LLM) and the scripted
test server's answers to the generation prompt.

Each template reads one sentence and keeps only a few of its words, so that the question is not
a copy of it: the topic (a name in the sentence, else the passage title), the two rarest other
content words of the sentence (``keywords``, rarity = corpus IDF) and the answer's unit.

- factoid: a count ("How many <unit> ..."), a year ("In which year ..."), a definition
  ("What is <term>?" from "<term> is a/an/the ..."), or a name ("Who or what is named ...");
- why_how: "What explains that <clause>?" from "<clause> because/so that/due to ...";
  "What is the means by which <clause>?" from "<clause> by <-ing> ...";
- list: "Which N things ..." from an enumeration "A, B and C";
- multi_passage: two factoids about the same name from two passages, joined;
- comparison: the same unit (or a year) in two passages: which is larger (earlier);
- unanswerable: a unit found elsewhere in the corpus asked of a name it never occurs with.

Templates read a passage's plain prose (``plain.sentences``: no markup, a heading never glued
to the sentence after it). The topic falls back to the passage title only when it reads as a
name (``title_topic``): never a file name or a document id. Reference answers are the source
sentences (both, for two-passage questions).
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ragjudge.schema import Document
from ragjudge.text import STOP_WORDS, content_words, word_matches

from . import plain
from .models import OFFLINE_GENERATOR, UNANSWERABLE_REFERENCE, Candidate

_CAUSE = re.compile(
    r"^(?P<effect>.{12,}?),?\s+(?:because|since|so that|in order to|due to|as a result of)\s+"
    r"(?P<cause>.{8,})$",
    re.I,
)
_BY = re.compile(r"^(?P<effect>.{12,}?)\s+by\s+(?P<means>\w+ing\b.{4,})$", re.I)
_DEFINITION = re.compile(
    r"^(?P<term>(?:(?:The|A|An)\s+)?[\w'-]+(?:\s+[\w'-]+){0,4}?)\s+(?P<verb>is|are|was|were)\s+"
    r"(?P<rest>(?:a|an|the)\s+.{8,})$"
)
_ENUM = re.compile(
    r"(?P<items>(?:[\w'-]+(?:\s+[\w'-]+){0,3},\s+){2,}(?:and|or)\s+[\w'-]+(?:\s+[\w'-]+){0,3})"
)
_NUMBER_UNIT = re.compile(
    r"(?<![\w.])(?P<num>\d[\d,]*(?:\.\d+)?)\s+(?P<unit>[a-z][a-z-]+(?:\s+[a-z][a-z-]+)?)"
)
_YEAR = re.compile(r"\b(?:in|of|by|from|since|until)\s+(?P<year>1[0-9]{3}|20[0-9]{2})\b")
_UNIT_STOP = STOP_WORDS | {"percent", "per", "years", "year", "times", "th", "st", "nd", "rd"}
_NOT_NOUNS = frozenset(
    """soon still often later early first last next another every since around about
    across along among began become became made make makes took take takes gave give gives
    kept keep went goes said says used uses uses known called named found lies lay laid
    built could would should within without between during""".split()
)
"""Frequent non-nouns the keyword choice skips (keywords stand in for the sentence's topic)."""
_NUMBER_WORDS = frozenset(
    """zero two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty
    ninety hundred hundreds thousand thousands million millions billion half third quarter
    second""".split()
)
TITLE_TOPIC_WORDS = 5
_NOT_IN_TITLE_TOPIC = re.compile(r"[:;,.!?/\\()\[\]\d]")
_LEADING = {"the", "a", "an", "this", "these", "it", "its", "in", "on", "at", "by", "for"}


def names(sentence: str) -> list[str]:
    """Runs of capitalised words (``of``/``the``/``de``/``von`` may join them), in order; a
    single capitalised word that starts the sentence is not a name, nor is a run holding a
    one-letter word ("GABA A", "Foxp3 T": fragments of a longer term)."""
    out: list[str] = []
    run: list[tuple[int, str]] = []
    toks = word_matches(sentence)

    def flush() -> None:
        while run and run[-1][1].lower() in {"of", "the", "de", "von", "van"}:
            run.pop()
        single = len(run) == 1 and run[0][0] == 0
        fragment = any(len(w) == 1 for _, w in run)
        if run and not single and not fragment and run[0][1].lower() not in STOP_WORDS:
            out.append(" ".join(w for _, w in run))
        run.clear()

    for i, m in enumerate(toks):
        w = m.group(0)
        if w[0].isupper() or (run and w.lower() in {"of", "the", "de", "von", "van"}):
            run.append((i, w))
        else:
            flush()
    flush()
    return out


@dataclass
class TemplateContext:
    """What the templates know about the corpus: document frequencies of content words (for
    keyword rarity) and, for unanswerable questions, the units seen and which passages use
    each word."""

    n_docs: int = 0
    df: Counter[str] = field(default_factory=Counter)
    units: list[str] = field(default_factory=list)
    word_docs: dict[str, set[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, passages: Sequence[Document]) -> TemplateContext:
        ctx = cls(n_docs=len(passages))
        unit_count: Counter[str] = Counter()
        for i, d in enumerate(passages):
            words = set(content_words(d.text))
            ctx.df.update(words)
            for w in words:
                ctx.word_docs.setdefault(w, set()).add(i)
            for m in _NUMBER_UNIT.finditer(d.text):
                unit = _unit(m["unit"])
                if unit:
                    unit_count[unit] += 1
        ctx.units = sorted(unit_count, key=lambda u: (-unit_count[u], u))
        return ctx

    def idf(self, word: str) -> float:
        return math.log((1 + self.n_docs) / (1 + self.df.get(word, 0))) + 1.0

    def keywords(self, sentence: str, exclude: str, k: int = 2) -> list[str]:
        """The ``k`` rarest content words of ``sentence`` not in ``exclude`` (no numbers)."""
        skip = set(content_words(exclude))
        seen: list[str] = []
        for w in content_words(sentence):
            if w in skip or w[0].isdigit() or w in seen or len(w) <= 3 or w in _NOT_NOUNS:
                continue
            if "'" in w or w in _NUMBER_WORDS:
                continue
            if not w.endswith(("ly", "ed", "ing")):
                seen.append(w)
        seen.sort(key=lambda w: -self.idf(w))
        return seen[:k]

    def co_occur(self, words: Sequence[str]) -> bool:
        """Whether some passage contains every one of ``words`` (content words)."""
        sets = [self.word_docs.get(w, set()) for w in words]
        return bool(sets) and bool(set.intersection(*sets))


def _unit(raw: str) -> str:
    """The counted noun after a number: a plural word ("workers", "metres"), or "people";
    "million"/"thousand"/"square" join the word after them. Anything else gives ""."""
    words = raw.split()
    if words[0] in {"million", "thousand", "square", "billion"} and len(words) > 1:
        words = words[1:]
    head = words[0]
    if head in _UNIT_STOP or not (head == "people" or (head.endswith("s") and len(head) > 3)):
        return ""
    return head


def title_topic(doc: Document) -> str:
    """The passage's title as a topic, or "" when it does not read as a name: more than
    ``TITLE_TOPIC_WORDS`` words, punctuation or digits in it (a sentence, a subtitle, a file
    name), markup, or the document's id or file name (a text file's title is its file name)."""
    title = plain.plain_line(doc.title or "")
    if not title or len(title.split()) > TITLE_TOPIC_WORDS or _NOT_IN_TITLE_TOPIC.search(title):
        return ""
    if plain.MARKUP.search(title):
        return ""
    own = {doc.id, doc.doc_id}
    own |= {PurePosixPath(i).stem for i in list(own)} | {PurePosixPath(i).name for i in own}
    if title.lower() in {i.lower() for i in own}:
        return ""
    return title


def _topic(sentence: str, doc: Document, avoid: str = "") -> str:
    for name in names(sentence):
        if name.lower() not in avoid.lower():
            return name
    return title_topic(doc)


def _kw(words: list[str]) -> str:
    return " and ".join(words)


def _candidate(
    qtype: str, question: str, reference: str, short: str, sources: list[str], template: str
) -> Candidate:
    question = " ".join(question.split())
    return Candidate(
        qtype=qtype,
        question=question[0].upper() + question[1:],
        reference=reference,
        short_answer=short,
        sources=sources,
        generator=OFFLINE_GENERATOR,
        template=template,
    )


def _clause(text: str) -> str:
    text = text.strip().rstrip(",;:")
    first = text.split(" ", 1)[0]
    if first in {"The", "A", "An", "It", "Its", "This", "These", "Each", "In", "On"}:
        text = first.lower() + text[len(first) :]
    return text


# ------------------------------------------------------------------------------- factoids


def _count(sentence: str, doc: Document, ctx: TemplateContext) -> Candidate | None:
    for m in _NUMBER_UNIT.finditer(sentence):
        unit = _unit(m["unit"])
        num = m["num"]
        if not unit or _YEAR.search(f"in {num}"):
            continue
        topic = _topic(sentence, doc, avoid=unit)
        kws = ctx.keywords(sentence, f"{unit} {topic}")
        if not topic or not kws:
            continue
        q = f"How many {unit} are given for {_kw(kws)} in {topic}?"
        return _candidate("factoid", q, sentence, f"{num} {unit}", [doc.id], "count")
    return None


def _year(sentence: str, doc: Document, ctx: TemplateContext) -> Candidate | None:
    m = _YEAR.search(sentence)
    if m is None:
        return None
    topic = _topic(sentence, doc)
    kws = ctx.keywords(sentence, topic)
    if not topic or len(kws) < 2:
        return None
    q = f"Which year goes with the {_kw(kws)} of {topic}?"
    return _candidate("factoid", q, sentence, m["year"], [doc.id], "year")


def _definition(sentence: str, doc: Document, ctx: TemplateContext) -> Candidate | None:
    m = _DEFINITION.match(sentence)
    if m is None or len(m["term"].split()) > 5:
        return None
    term = m["term"]
    if term.split()[0] in {"The", "A", "An"}:
        term = term[0].lower() + term[1:]
    if term.split()[0].lower() in _LEADING - {"the", "a", "an"} or not content_words(term):
        return None
    verb = "are" if m["verb"] in ("are", "were") else "is"
    short = " ".join(m["rest"].split()[:8])
    return _candidate("factoid", f"What {verb} {term}?", sentence, short, [doc.id], "definition")


def _name(sentence: str, doc: Document, ctx: TemplateContext) -> Candidate | None:
    found = [n for n in names(sentence) if len(n.split()) >= 2]
    if not found:
        return None
    answer = found[-1]
    topic = _topic(sentence, doc, avoid=answer)
    kws = ctx.keywords(sentence, f"{answer} {topic}")
    if not topic or topic == answer or len(kws) < 2:
        return None
    q = f"Who or what is named for the {_kw(kws)} in {topic}?"
    return _candidate("factoid", q, sentence, answer, [doc.id], "name")


FACTOID_TEMPLATES: tuple[Callable[[str, Document, TemplateContext], Candidate | None], ...] = (
    _count,
    _year,
    _definition,
    _name,
)


_NO_SUBJECT = frozenset(
    "we they it this these those he she i you rather however here thus hence also".split()
)
"""First words of a clause that cannot stand alone in a question ("... by which They
conclude?"): a pronoun or a connective pointing back to an earlier sentence."""


def _why(sentence: str, doc: Document, ctx: TemplateContext) -> Candidate | None:
    first = sentence.split(" ", 1)[0].strip(",").lower()
    if first in _NO_SUBJECT:
        return None
    m = _CAUSE.match(sentence.rstrip("."))
    if m is not None:
        effect = _clause(m["effect"])
        q = f"What explains that {effect}?"
        return _candidate("why_how", q, sentence, m["cause"], [doc.id], "why")
    m = _BY.match(sentence.rstrip("."))
    if m is not None:
        effect = _clause(m["effect"])
        q = f"What is the means by which {effect}?"
        return _candidate("why_how", q, sentence, m["means"], [doc.id], "how")
    return None


def _list(sentence: str, doc: Document, ctx: TemplateContext) -> Candidate | None:
    m = _ENUM.search(sentence)
    if m is None:
        return None
    items = [p.strip() for p in re.split(r",\s*|\s+(?:and|or)\s+", m["items"]) if p.strip()]
    items = [re.sub(r"^(?:and|or)\s+", "", p) for p in items]
    if len(items) < 3:
        return None
    topic = _topic(sentence, doc, avoid=m["items"])
    kws = ctx.keywords(sentence, f"{m['items']} {topic}")
    if not topic or not kws:
        return None
    q = f"Which {len(items)} things are listed for the {_kw(kws)} in {topic}?"
    return _candidate("list", q, sentence, "; ".join(items), [doc.id], "list")


def _sentences(doc: Document) -> list[str]:
    return [s for s in plain.sentences(doc.text) if 6 <= len(s.split()) <= 60]


def _first(
    doc: Document,
    ctx: TemplateContext,
    templates: Sequence[Callable[[str, Document, TemplateContext], Candidate | None]],
    rng: random.Random,
) -> Candidate | None:
    sents = _sentences(doc)
    rng.shuffle(sents)
    for sent in sents:
        for t in templates:
            c = t(sent, doc, ctx)
            if c is not None:
                return c
    return None


def factoid(doc: Document, ctx: TemplateContext, rng: random.Random) -> Candidate | None:
    order = list(FACTOID_TEMPLATES)
    rng.shuffle(order)
    return _first(doc, ctx, order, rng)


def why_how(doc: Document, ctx: TemplateContext, rng: random.Random) -> Candidate | None:
    return _first(doc, ctx, [_why], rng)


def listing(doc: Document, ctx: TemplateContext, rng: random.Random) -> Candidate | None:
    return _first(doc, ctx, [_list], rng)


# ---------------------------------------------------------------------- two-passage types


def multi_passage(
    a: Document, b: Document, ctx: TemplateContext, rng: random.Random
) -> Candidate | None:
    """Two factoids, one per passage, joined into one question."""
    first = factoid(a, ctx, rng)
    second = factoid(b, ctx, rng)
    if first is None or second is None or first.reference == second.reference:
        return None
    q = f"{first.question.rstrip('?')}, and {second.question[0].lower()}{second.question[1:]}"
    return Candidate(
        qtype="multi_passage",
        question=q,
        reference=f"{first.reference} {second.reference}",
        short_answer=f"{first.short_answer}; {second.short_answer}",
        sources=[a.id, b.id],
        generator=OFFLINE_GENERATOR,
        template=f"multi:{first.template}+{second.template}",
    )


def _measures(doc: Document) -> list[tuple[str, float, str, str]]:
    """(unit, value, sentence, number text) of every counted quantity and year in ``doc``."""
    out: list[tuple[str, float, str, str]] = []
    for sent in _sentences(doc):
        for m in _NUMBER_UNIT.finditer(sent):
            unit = _unit(m["unit"])
            if unit:
                out.append((unit, float(m["num"].replace(",", "")), sent, m["num"]))
        y = _YEAR.search(sent)
        if y is not None:
            out.append(("year", float(y["year"]), sent, y["year"]))
    return out


def comparison(
    a: Document, b: Document, ctx: TemplateContext, rng: random.Random
) -> Candidate | None:
    """The same unit (or a year) in both passages, about two different topics."""
    left = _measures(a)
    right = {u: (v, s, t) for u, v, s, t in _measures(b)}
    rng.shuffle(left)
    for unit, v1, s1, t1 in left:
        if unit not in right:
            continue
        v2, s2, t2 = right[unit]
        x, y = _topic(s1, a), _topic(s2, b)
        if not x or not y or set(content_words(x)) & set(content_words(y)) or v1 == v2:
            continue
        if unit == "year":
            kws = ctx.keywords(s1, x, k=1) + ctx.keywords(s2, y, k=1)
            if len(kws) < 2:
                continue
            q = f"Which came first: the {kws[0]} of {x} or the {kws[1]} of {y}?"
            short = x if v1 < v2 else y
        else:
            q = f"Which is larger: the number of {unit} given for {x} or for {y}?"
            short = x if v1 > v2 else y
        ref = f"{s1} {s2}"
        return Candidate(
            qtype="comparison",
            question=q,
            reference=f"{ref} So the answer is {short} ({x}: {t1}; {y}: {t2}).",
            short_answer=short,
            sources=[a.id, b.id],
            generator=OFFLINE_GENERATOR,
            template=f"comparison:{'year' if unit == 'year' else 'count'}",
        )
    return None


def unanswerable(doc: Document, ctx: TemplateContext, rng: random.Random) -> Candidate | None:
    """A unit the corpus uses elsewhere, asked of a name of ``doc`` that no passage mentions
    together with it."""
    topics = [n for s in _sentences(doc) for n in names(s)] or [title_topic(doc)]
    topics = [t for t in dict.fromkeys(topics) if t and content_words(t)]
    rng.shuffle(topics)
    units = list(ctx.units[:40])
    rng.shuffle(units)
    for topic in topics[:5]:
        for unit in units:
            if ctx.co_occur([*content_words(topic), *content_words(unit)]):
                continue
            q = f"How many {unit} are recorded for {topic}?"
            return Candidate(
                qtype="unanswerable",
                question=q,
                reference=UNANSWERABLE_REFERENCE,
                sources=[doc.id],
                generator=OFFLINE_GENERATOR,
                template="unanswerable:unit",
            )
    return None


def one_passage(
    qtype: str, doc: Document, ctx: TemplateContext, rng: random.Random
) -> Candidate | None:
    """A template question of ``qtype`` about one passage, or None when none fits."""
    makers = {"factoid": factoid, "why_how": why_how, "list": listing, "unanswerable": unanswerable}
    return makers[qtype](doc, ctx, rng)


def two_passage(
    qtype: str, a: Document, b: Document, ctx: TemplateContext, rng: random.Random
) -> Candidate | None:
    return (multi_passage if qtype == "multi_passage" else comparison)(a, b, ctx, rng)
