"""Features of the offline judges: what the bundled model and the text say about a pair of texts.

Every feature is a number computed from one pair only (a claim and ONE chunk, a question and ONE
chunk, ...), never normalised across chunks: so the verdict on chunk j does not change when other
chunks are added or removed, and the k-sweep's prefix derivation is exact.

Support of a claim by a chunk (``support_features``), on the chunk's sentence units and the
windows of two adjacent units:

- ``cos_max``: max cosine between the claim and a unit or window;
- ``cos_chunk``: cosine between the claim and the whole chunk (the encoder reads its first 256
  word pieces): support spread over the chunk rather than in one unit;
- ``lex_best``: share of the claim's content-word stems found in the best (by cosine) unit;
- ``lex_max``: the same share, maximised over units and windows;
- ``lex_chunk``: the same share in the whole chunk;
- ``bigram``: share of the claim's adjacent content-stem pairs found adjacent in the chunk;
- ``num_miss``: share of the claim's numbers and dates (digits, number words, years, month and
  weekday names: ``quantities``) not in the chunk;
- ``ent_miss``: share of the claim's names (capitalised, non-initial tokens) not in the chunk;
- ``neg_mismatch``: 1 when exactly one of the claim and its best unit is negated;
- ``claim_len``: log(1 + content words of the claim).

Answer relevancy (``relevancy_features``) and aspect coverage (``aspect_features``) are
documented on the functions.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Hashable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ragjudge.judges.offline.embed import EmbeddingCache
from ragjudge.judges.offline.segment import (
    Aspect,
    context_units,
    hedge_rate,
    is_non_committal,
    negated,
    question_aspects,
    without_citations,
)
from ragjudge.text import (
    STOP_WORDS,
    content_words,
    numbers,
    split_sentences,
    tokens,
    word_matches,
)

SUPPORT_FEATURES = (
    "cos_max",
    "cos_chunk",
    "lex_best",
    "lex_max",
    "lex_chunk",
    "bigram",
    "num_miss",
    "ent_miss",
    "neg_mismatch",
    "claim_len",
)
RELEVANCY_FEATURES = (
    "qa_cos",
    "sent_cos_max",
    "sent_cos_mean",
    "aspect_cov_mean",
    "aspect_cov_min",
    "type_ok",
    "q_term_cov",
    "new_info",
    "n_claims",
    "non_committal",
    "hedge",
    "off_topic",
)
SHORT_RELEVANCY_FEATURES = (
    "qa_cos",
    "aspect_cov_mean",
    "aspect_cov_min",
    "type_ok",
    "type_miss",
    "q_term_cov",
    "new_info",
)
"""The ``relevancy_features`` that mean something for a fragment answer ("Rollo", "in 1844";
``segment.terse_answer``): it has no sentences of its own to count or to find off-topic, so
the ``short_relevancy`` model reads only these."""
SHORT_SUPPORT_FEATURES = ("ans_cov", "near_q_cov", "q_cos_gap", "ans_q_cos", "type_miss")
"""Features of whether a chunk supports a short answer ("Rollo", "1844"; ``segment.short_answer``)
as the answer to its question (``short_support_features``): holding the answer's words is not
enough when the chunk names it as the answer to something else."""
ASPECT_FEATURES = ("asp_cos", "asp_type_ok", "asp_term_cov")
XENC_FEATURES = ("xenc_logit", "xenc_overlap")
"""The claim-support model's best-window logit and the share of the claim's content words in
the chunk's best window (``supportmodel.SupportModel.chunk_scores``)."""
CHUNK_FEATURES = (
    "q_cos_max",
    "q_term_cov",
    "rel_density",
    "asp_cov",
    "ref_support",
    "has_ref",
)

TYPED_ANSWERS = frozenset({"date", "number", "person", "place"})
"""Kinds of answer whose absence ``_type_ok`` can see in the answer's words."""

FEATURE_SIGNS: dict[str, dict[str, int]] = {
    "support": {
        "cos_max": 1,
        "cos_chunk": 1,
        "lex_best": 1,
        "lex_max": 1,
        "lex_chunk": 1,
        "bigram": 1,
        "num_miss": -1,
        "ent_miss": -1,
        "neg_mismatch": -1,
        "claim_len": -1,
    },
    "relevancy": {
        "qa_cos": 1,
        "sent_cos_max": 1,
        "sent_cos_mean": 0,
        "aspect_cov_mean": 1,
        "aspect_cov_min": 1,
        "type_ok": 1,
        "q_term_cov": 1,
        "new_info": 1,
        "n_claims": 1,
        "non_committal": -1,
        "hedge": -1,
        "off_topic": -1,
    },
    "short_relevancy": {
        "qa_cos": 1,
        "aspect_cov_mean": 1,
        "aspect_cov_min": 1,
        "type_ok": 1,
        "type_miss": -1,
        "q_term_cov": 0,
        "new_info": 0,
    },
    "short_support": {
        "ans_cov": 1,
        "near_q_cov": 1,
        "q_cos_gap": -1,
        "ans_q_cos": 1,
        "type_miss": -1,
    },
    "aspect": {"asp_cos": 1, "asp_type_ok": 1, "asp_term_cov": 1},
    "xenc": {"xenc_logit": 1, "xenc_overlap": 1},
    "chunk": {
        "q_cos_max": 1,
        "q_term_cov": 1,
        "rel_density": 1,
        "asp_cov": 1,
        "ref_support": 1,
        "has_ref": 0,
    },
}
"""The direction each feature may push its model's probability: +1 (more of it never lowers p),
-1 (never raises it), 0 (free). Fitting keeps every coefficient on its side of zero, so a fitted
judge stays monotone in its evidence (more matching words never lowers support). ``claim_len``
is -1: a longer claim has more to support, so length alone never raises support (ExpertQA's
labels would have it raise support, which would rate a short, fully matched claim partial)."""

RULE_FEATURES: dict[str, frozenset[str]] = {"support": frozenset({"num_miss", "neg_mismatch"})}
"""Features applied as rules, not weighed: fitting holds their coefficients at 0 and
``support.support_matrix`` caps the probability instead (a chunk that lacks some of the claim's
numbers and dates supports it at most partly; one that lacks all of them or flips its negation
does not support it; ``ent_miss`` is weighed and also caps at partly). Faithfulness is to the
context given, so this is what the words mean, and the public labels cannot estimate it: they
hold few such claims, and ExpertQA's evidence is an excerpt of the page the experts read, so a
number missing from the excerpt is no sign of an unsupported claim there."""

_SUFFIXES = (
    "ations",
    "ation",
    "ings",
    "ing",
    "ness",
    "ment",
    "edly",
    "ies",
    "ied",
    "ed",
    "es",
    "ly",
    "s",
)
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_NAME = re.compile(r"\b[A-Z][a-zA-Z0-9'-]+")
_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)
_WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_DATE_WORDS = _MONTHS | _WEEKDAYS
_DATE_WORD = re.compile(r"\b(?:" + "|".join(w.capitalize() for w in sorted(_DATE_WORDS)) + r")\b")
_REASON_CUES = frozenset(
    "because due cause caused causes reason result resulted since therefore owing so led".split()
)
OFF_TOPIC_COS = 0.2
"""An answer sentence with cosine below this to the question counts as off-topic."""
SHORT_NEAR = 6
"""Content words either side of a short answer in a chunk that ``near_q_cov`` looks at."""
DENSITY_COS = 0.35
"""A chunk unit with cosine at least this to the question counts as on-topic (rel_density)."""


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """A crude suffix-stripping stem, keeping at least four letters (kept per word: a text's
    words repeat across the texts a judge stems)."""
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 4:
            return token[: -len(suffix)]
    return token


def stems(text: str) -> list[str]:
    """The stems of ``text``'s content words, in order (a new list: callers may change it)."""
    return list(_stems(text))


@lru_cache(maxsize=65536)
def _stems(text: str) -> tuple[str, ...]:
    # a judge stems each claim once per chunk and each chunk once per judge: cache the result
    return tuple(stem(t) for t in content_words(text))


def number_set(text: str) -> set[str]:
    """Numbers in ``text``, digits and number words alike (``seven`` -> ``7``)."""
    out = numbers(text)
    out.update(_NUMBER_WORDS[t] for t in tokens(text) if t in _NUMBER_WORDS)
    return out


@lru_cache(maxsize=65536)
def quantities(text: str) -> frozenset[str]:
    """``number_set`` plus the month and weekday names written capitalised (so the verb "may"
    is not a date): the parts of a claim that must match exactly, "30 August" against "30 July"
    as much as 1925 against 1889."""
    return frozenset(number_set(text) | {m.group(0).lower() for m in _DATE_WORD.finditer(text)})


@lru_cache(maxsize=65536)
def names(text: str) -> frozenset[str]:
    """Stems of the word tokens (``text.tokens``, so they compare with a chunk's tokens) that are
    capitalised, not sentence-initial, two characters or more, and neither stop words nor
    month or weekday names (those are ``quantities``): "Beekeepers'" gives ``beekeeper``,
    "sub-Saharan" is no name."""
    out: set[str] = set()
    for sentence in split_sentences(text):
        for m in word_matches(sentence):
            word = m.group(0)
            if m.start() == 0 or len(word) < 2 or not word[0].isupper():
                continue
            low = word.lower()
            if low not in STOP_WORDS and low not in _DATE_WORDS:
                out.add(stem(low))
    return frozenset(out)


def capitalised(text: str) -> set[str]:
    """Lower-cased capitalised tokens anywhere (sentence-initial too), minus stop words."""
    return {
        stem(m.group(0).lower())
        for m in _NAME.finditer(text)
        if m.group(0).lower() not in STOP_WORDS and m.group(0).lower() not in _MONTHS
    }


def _bigrams(seq: list[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(seq))


def _share_in(items: Iterable[Hashable], pool: AbstractSet[Hashable]) -> float:
    """Share of ``items`` found in ``pool`` (1.0 for no items); a list counts each repeat."""
    if isinstance(items, set | frozenset):
        return len(items & pool) / len(items) if items else 1.0
    seq = list(items)
    return sum(i in pool for i in seq) / len(seq) if seq else 1.0


@dataclass(frozen=True)
class TextProfile:
    """A context chunk (or an answer used as one), prepared once: units, windows, word sets."""

    text: str
    units: tuple[str, ...]
    windows: tuple[str, ...]
    unit_stems: tuple[frozenset[str], ...]
    window_stems: tuple[frozenset[str], ...]
    unit_negated: tuple[bool, ...]
    stems: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    """``quantities`` of the text."""
    raw_tokens: frozenset[str]

    @property
    def texts(self) -> tuple[str, ...]:
        """Units then windows: the texts to embed."""
        return self.units + self.windows


@lru_cache(maxsize=4096)
def profile(text: str, *, as_units: bool = False) -> TextProfile:
    """The profile of a chunk; ``as_units`` splits plain sentences (for answers)."""
    units = tuple(split_sentences(text) if as_units else context_units(text))
    windows = tuple(f"{a} {b}" for a, b in itertools.pairwise(units))
    unit_stems = tuple(frozenset(stems(u)) for u in units)
    window_stems = tuple(a | b for a, b in itertools.pairwise(unit_stems))
    all_stems = stems(text)
    return TextProfile(
        text=text,
        units=units,
        windows=windows,
        unit_stems=unit_stems,
        window_stems=window_stems,
        unit_negated=tuple(negated(u) for u in units),
        stems=frozenset(all_stems),
        bigrams=frozenset(_bigrams(all_stems)),
        numbers=frozenset(quantities(text)),
        raw_tokens=frozenset(stem(t) for t in tokens(text)),
    )


def lexical_checks(
    claim: str, chunk: TextProfile, given: frozenset[str] = frozenset()
) -> tuple[float, float, float]:
    """(``num_miss``, ``ent_miss``, ``neg_mismatch``) of ``claim`` in ``chunk`` from words alone:
    the shares of its numbers and dates and of its names (less ``given``) that the chunk lacks
    (0.0 when it has none), and 1.0 when exactly one of the claim and the chunk unit sharing
    most of its content words is negated."""
    neg = 0.0
    if chunk.units:
        cset = set(stems(claim))
        best = max(range(len(chunk.units)), key=lambda u: _share_in(cset, chunk.unit_stems[u]))
        neg = float(negated(claim) != chunk.unit_negated[best])
    return (*_misses(claim, chunk, given), neg)


def _misses(claim: str, chunk: TextProfile, given: frozenset[str]) -> tuple[float, float]:
    """``lexical_checks``' ``num_miss`` and ``ent_miss`` alone."""
    nums = quantities(claim)
    ents = names(claim) - given
    return (
        1.0 - _share_in(nums, chunk.numbers) if nums else 0.0,
        1.0 - _share_in(ents, chunk.raw_tokens) if ents else 0.0,
    )


def support_features(
    claims: list[str],
    chunk: TextProfile,
    cache: EmbeddingCache,
    *,
    given: frozenset[str] = frozenset(),
) -> np.ndarray:
    """``(len(claims), len(SUPPORT_FEATURES))`` support features of each claim by ``chunk``.

    ``given``: stems that count as present whatever the chunk says (completeness passes the
    question's, so "It was completed in 1889" covers "The Eiffel Tower was completed in 1889"
    when the question names the tower).
    """
    out = np.zeros((len(claims), len(SUPPORT_FEATURES)), dtype=np.float64)
    if not claims:
        return out
    texts = chunk.texts
    claim_vecs = cache.vectors(claims)
    sims = claim_vecs @ cache.vectors(list(texts)).T if texts else None
    whole = claim_vecs @ cache.vectors([chunk.text])[0] if chunk.text.strip() else None
    pools = chunk.unit_stems + chunk.window_stems
    n_units = len(chunk.units)
    bests = sims.argmax(axis=1).tolist() if sims is not None and sims.shape[1] else None
    for i, claim in enumerate(claims):
        cstems = stems(claim)
        cset = set(cstems) - given
        if sims is not None and bests is not None:
            best = bests[i]
            cos_max = float(sims[i, best])
            lex_best = _share_in(cset, pools[best])
            lex_max = max(_share_in(cset, p) for p in pools)
            best_unit = best if best < n_units else best - n_units
            neg_mismatch = float(negated(claim) != chunk.unit_negated[best_unit])
        else:
            cos_max = lex_best = lex_max = neg_mismatch = 0.0
        # the negation feature is the one above (the best-matching text's unit), not lexical_checks'
        num_miss, ent_miss = _misses(claim, chunk, given)
        out[i] = (
            cos_max,
            float(whole[i]) if whole is not None else 0.0,
            lex_best,
            lex_max,
            _share_in(cset, chunk.stems),
            _share_in(_bigrams(cstems), chunk.bigrams) if len(cstems) > 1 else 1.0,
            num_miss,
            ent_miss,
            neg_mismatch,
            math.log1p(len(cstems)),
        )
    return out


def support_texts(claims: list[str], chunk: TextProfile) -> list[str]:
    """The texts ``support_features(claims, chunk, ...)`` embeds, in the order it asks."""
    if not claims:
        return []
    return [*claims, *chunk.texts, *([chunk.text] if chunk.text.strip() else [])]


def short_support_features(
    question: str, answer: str, chunks: list[TextProfile], cache: EmbeddingCache
) -> np.ndarray:
    """``(len(chunks), len(SHORT_SUPPORT_FEATURES))``: does each chunk give ``answer`` (a short
    answer) as the answer to ``question``?

    The answer's stems are those not in the question (all of them when every one is); the
    answer units are the chunk's units holding the largest share (> 0) of them, and the reach
    is the answer units plus every unit sharing with one of them a capitalised word that is in
    neither the question nor the answer (one hop: "Tomas Brell was born in Kelmouth" reaches
    "The lighthouse was built by Tomas Brell" for "Where was the lighthouse's builder born?").
    ``ans_cov`` = share of the answer's stems in the chunk; ``near_q_cov`` = the largest share
    of the question's other stems within ``SHORT_NEAR`` content words of an answer stem in the
    chunk (1.0 when the question has no other stem); ``ans_q_cos`` = the largest cosine between
    the question and a unit of the reach (0 without one); ``q_cos_gap`` = the largest cosine
    between the question and any unit, less ``ans_q_cos``: 0 when the answer sits in, or one
    hop from, the unit that matches the question best; ``type_miss`` = share of the question's
    aspects asking for a date, number, person or place whose kind the answer lacks
    (``_type_ok``; 0 when none asks), the same for every chunk.
    """
    out = np.zeros((len(chunks), len(SHORT_SUPPORT_FEATURES)), dtype=np.float64)
    qset = set(stems(question))
    answer_stems = set(stems(answer))
    own = (answer_stems - qset) or answer_stems
    rest = qset - own
    typed = [a for a in question_aspects(question) if a.answer_type in TYPED_ANSWERS]
    type_miss = 1.0 - float(np.mean([_type_ok(a, answer, question) for a in typed] or [1.0]))
    qv = cache.vectors([question])[0] if chunks else None
    known = capitalised(question) | capitalised(answer)
    for j, chunk in enumerate(chunks):
        shares = [_share_in(own, u) for u in chunk.unit_stems] if own else []
        top = max(shares, default=0.0)
        answer_units = [u for u, x in enumerate(shares) if x == top and x > 0]
        links = [capitalised(u) - known for u in chunk.units]
        reach = {v for u in answer_units for v, x in enumerate(links) if x & links[u]}
        reach.update(answer_units)
        seq = stems(chunk.text)
        near = 0.0
        for at in (i for i, x in enumerate(seq) if x in own):
            window = set(seq[max(0, at - SHORT_NEAR) : at + SHORT_NEAR + 1])
            near = max(near, _share_in(rest, window) if rest else 1.0)
        ans_cos = best_cos = 0.0
        if chunk.units and qv is not None:
            cos = cache.vectors(list(chunk.units)) @ qv
            ans_cos = max((float(cos[u]) for u in reach), default=0.0)
            best_cos = float(cos.max())
        out[j] = (
            _share_in(own, chunk.stems) if own else 0.0,
            near,
            best_cos - ans_cos,
            ans_cos,
            type_miss,
        )
    return out


def short_support_texts(question: str, chunks: list[TextProfile]) -> list[str]:
    """The texts ``short_support_features(question, _, chunks, ...)`` embeds."""
    if not chunks:
        return []
    return [question, *(u for c in chunks for u in c.units)]


def _type_ok(aspect: Aspect, answer: str, question: str) -> float:
    """1 when ``answer`` contains the kind of thing ``aspect`` asks for (see ``answer_type``)."""
    kind = aspect.answer_type
    low_tokens = set(tokens(answer))
    new_names = capitalised(answer) - capitalised(question)
    if kind == "date":
        has_year = any(len(n) == 4 and n.isdigit() for n in numbers(answer))
        return float(has_year or bool(low_tokens & _MONTHS) or bool(number_set(answer)))
    if kind == "number":
        return float(bool(number_set(answer) - number_set(question)) or bool(number_set(answer)))
    if kind in ("person", "place"):
        return float(bool(new_names))
    if kind == "reason":
        return float(bool(low_tokens & _REASON_CUES))
    if kind == "yesno":
        return float(bool(low_tokens & {"yes", "no", "not"}) or len(content_words(answer)) > 3)
    qset = set(stems(question))
    return float(len(set(stems(answer)) - qset) >= 2)


def aspect_features(
    aspects: list[Aspect], answer: str, question: str, cache: EmbeddingCache
) -> np.ndarray:
    """``(len(aspects), 3)``: per question aspect, how well the answer covers it.

    ``asp_cos`` = max cosine between the aspect and an answer sentence (or the whole answer);
    ``asp_type_ok`` = the answer holds the expected kind of answer (``_type_ok``);
    ``asp_term_cov`` = share of the aspect's content stems found in the answer.
    The answer is read without its citation markers (``segment.without_citations``).
    """
    answer, units = _aspect_units(answer)
    out = np.zeros((len(aspects), len(ASPECT_FEATURES)), dtype=np.float64)
    if not aspects or not answer.strip():
        return out
    sims = cache.vectors([a.text for a in aspects]) @ cache.vectors(units).T
    astems = set(stems(answer))
    for i, aspect in enumerate(aspects):
        out[i] = (
            float(sims[i].max()),
            _type_ok(aspect, answer, question),
            _share_in(set(stems(aspect.text)), astems),
        )
    return out


def _answer_sentences(answer: str) -> tuple[str, list[str]]:
    """The answer without citation markers and its non-empty sentences."""
    answer = without_citations(answer)
    return answer, [s for s in split_sentences(answer) if s.strip()]


def _aspect_units(answer: str) -> tuple[str, list[str]]:
    """The answer without citation markers and what ``aspect_features`` compares an aspect
    with: its sentences (the answer itself when it has none), plus the whole answer when it has
    more than one."""
    answer, sentences = _answer_sentences(answer)
    sentences = sentences or [answer]
    return answer, [*sentences, answer] if len(sentences) > 1 else sentences


def aspect_texts(aspects: list[Aspect], answer: str) -> list[str]:
    """The texts ``aspect_features(aspects, answer, ...)`` embeds."""
    answer, units = _aspect_units(answer)
    if not aspects or not answer.strip():
        return []
    return [*(a.text for a in aspects), *units]


def relevancy_texts(question: str, answer: str) -> list[str]:
    """The texts ``relevancy_features(question, answer, ...)`` embeds."""
    answer, sentences = _answer_sentences(answer)
    if not sentences:
        return []
    return [question, answer, *sentences, *aspect_texts(question_aspects(question), answer)]


def relevancy_features(question: str, answer: str, cache: EmbeddingCache) -> dict[str, float]:
    """Features of how well ``answer`` addresses ALL of ``question``.

    ``qa_cos`` (question vs whole answer), ``sent_cos_max`` / ``sent_cos_mean`` (vs answer
    sentences), ``aspect_cov_mean`` / ``aspect_cov_min`` (per question aspect, the max cosine to
    an answer sentence), ``type_ok`` (share of aspects whose expected answer type is present),
    ``type_miss`` (share of the aspects asking for a date, number, person or place whose kind
    of answer is absent; 0 when none asks for one: a name given for "in what year" is a
    miss), ``q_term_cov`` (share of question content stems in the answer), ``new_info`` (log
    of 1 + the
    answer's content stems not in the question: informativeness), ``n_claims`` (log of 1 + answer
    sentences with three or more content words), ``non_committal`` (share of answer sentences
    that decline to answer), ``hedge`` (hedge-word rate), ``off_topic`` (share of answer sentences
    with cosine below ``OFF_TOPIC_COS`` to the question). The answer is read without its
    citation markers (``segment.without_citations``): "[1]" is no part of what it says.
    """
    answer, sentences = _answer_sentences(answer)
    if not sentences:
        every = dict.fromkeys((*RELEVANCY_FEATURES, *SHORT_RELEVANCY_FEATURES), 0.0)
        return every | {"non_committal": 1.0}
    aspects = question_aspects(question)
    vecs = cache.vectors([question, answer, *sentences])
    q, a, s = vecs[0], vecs[1], vecs[2:]
    sent_cos = s @ q
    asp = aspect_features(aspects, answer, question, cache)
    typed = [i for i, a in enumerate(aspects) if a.answer_type in TYPED_ANSWERS]
    qstems = set(stems(question))
    astems = set(stems(answer))
    return {
        "qa_cos": float(a @ q),
        "sent_cos_max": float(sent_cos.max()),
        "sent_cos_mean": float(sent_cos.mean()),
        "aspect_cov_mean": float(asp[:, 0].mean()) if len(asp) else 0.0,
        "aspect_cov_min": float(asp[:, 0].min()) if len(asp) else 0.0,
        "type_ok": float(asp[:, 1].mean()) if len(asp) else 0.0,
        "type_miss": float(1.0 - asp[typed, 1].mean()) if typed else 0.0,
        "q_term_cov": _share_in(qstems, astems) if qstems else 1.0,
        "new_info": math.log1p(len(astems - qstems)),
        "n_claims": math.log1p(sum(len(content_words(x)) >= 3 for x in sentences)),
        "non_committal": sum(is_non_committal(x) for x in sentences) / len(sentences),
        "hedge": hedge_rate(answer),
        "off_topic": float((sent_cos < OFF_TOPIC_COS).mean()),
    }


def chunk_features(
    question: str,
    chunk: TextProfile,
    cache: EmbeddingCache,
    *,
    reference_support: float | None = None,
) -> dict[str, float]:
    """Features of one chunk's relevance to the question (and the reference, when given).

    ``q_cos_max`` (max cosine question vs unit or window), ``q_term_cov`` (share of question
    content stems in the chunk), ``rel_density`` (share of units with cosine at least
    ``DENSITY_COS``: a focused chunk scores higher than one padded with unrelated text),
    ``asp_cov`` (per question aspect, max cosine to a unit; mean over aspects), ``ref_support``
    (max support probability of a reference point by this chunk; 0 without reference), ``has_ref``.
    """
    texts = list(chunk.texts)
    if not texts:
        return dict.fromkeys(CHUNK_FEATURES, 0.0)
    aspects = question_aspects(question)
    qv = cache.vectors([question, *[a.text for a in aspects]])
    tv = cache.vectors(texts)
    sims = tv @ qv[0]
    unit_sims = sims[: len(chunk.units)]
    asp = (tv @ qv[1:].T).max(axis=0) if len(aspects) else np.zeros(1)
    qstems = set(stems(question))
    return {
        "q_cos_max": float(sims.max()),
        "q_term_cov": _share_in(qstems, chunk.stems) if qstems else 0.0,
        "rel_density": np.count_nonzero(unit_sims >= DENSITY_COS) / len(unit_sims)
        if len(unit_sims)
        else 0.0,
        "asp_cov": float(asp.sum() / len(asp)),  # = asp.mean(), without its overhead
        "ref_support": float(reference_support or 0.0),
        "has_ref": float(reference_support is not None),
    }


def chunk_texts(question: str, chunk: TextProfile) -> list[str]:
    """The texts ``chunk_features(question, chunk, ...)`` embeds."""
    if not chunk.texts:
        return []
    return [question, *(a.text for a in question_aspects(question)), *chunk.texts]
