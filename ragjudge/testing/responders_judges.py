"""Scripted, deterministic answers to the judge and generator prompts, for the local test server.

They read the fenced data of the request (``<answer>``, ``<context id=n>`` ...) and decide by
content-word overlap, so equal inputs always give equal answers and the verdict on a pair
(claim, context) never depends on the other contexts (what the prefix derivation of context
recall/precision relies on):

- a claim is supported by a context when >= ``SUPPORT`` of its content words, and all of its
  numbers, occur in the context;
- a context is relevant when it supports some sentence of the reference (or, without one,
  shares >= ``SUPPORT`` of the question's content words);
- a key point is covered when >= ``SUPPORT`` of its content words occur in the answer;
- relevancy rubric from the share of the question's content words the answer uses; answers
  matching ``NONCOMMITTAL`` are non-committal.

Claims, key points and reference claims are the sentences (``ragjudge.text.split_sentences``).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from ragjudge.testing.responders import last_user_text, responder
from ragjudge.text import content_words, numbers, split_sentences

SUPPORT = 0.7
NONCOMMITTAL = re.compile(
    r"\b(i don't know|i do not know|cannot answer|not sure|it depends)\b", re.I
)
NO_ANSWER = "I don't know: the contexts do not contain the answer."

_TAG = re.compile(r"<(?P<tag>[a-z]+)(?: id=\"(?P<id>\d+)\")?>(?P<body>.*?)</(?P=tag)>", re.S)


def fenced(body: dict[str, Any]) -> dict[str, list[str]]:
    """Fenced data of the last user message: tag -> texts (contexts in id order)."""
    out: dict[str, list[str]] = {}
    for m in _TAG.finditer(last_user_text(body)):
        out.setdefault(m["tag"], []).append(m["body"].replace("&lt;", "<"))
    return out


def _one(data: dict[str, list[str]], tag: str) -> str:
    return data.get(tag, [""])[0]


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """The content words of ``text``, kept: the same contexts and claims come back in every
    judge's request, and a server under load spent most of its CPU recomputing them."""
    return frozenset(content_words(text))


@functools.lru_cache(maxsize=4096)
def _numbers(text: str) -> frozenset[str]:
    return frozenset(numbers(text))


def supports(claim: str, context: str) -> bool:
    words = _words(claim)
    if not words:
        return False
    return len(words & _words(context)) / len(words) >= SUPPORT and _numbers(claim) <= _numbers(
        context
    )


def covered(point: str, text: str) -> float:
    words = _words(point)
    return len(words & _words(text)) / len(words) if words else 0.0


def _json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


@responder("judges/faithfulness")
def faithfulness(body: dict[str, Any]) -> str:
    data = fenced(body)
    contexts = data.get("context", [])
    claims = []
    for sent in split_sentences(_one(data, "answer")):
        if NONCOMMITTAL.search(sent) or not content_words(sent):
            continue
        ids = [j + 1 for j, c in enumerate(contexts) if supports(sent, c)]
        claims.append(
            {"claim": sent, "verdict": "supported" if ids else "unsupported", "chunks": ids}
        )
    return _json({"claims": claims})


@responder("judges/answer_relevancy")
def answer_relevancy(body: dict[str, Any]) -> str:
    data = fenced(body)
    question, answer = _one(data, "question"), _one(data, "answer")
    if NONCOMMITTAL.search(answer):
        return _json({"score": 0, "noncommittal": True, "explanation": "The answer hedges."})
    share = covered(question, answer)
    score = 3 if share >= 0.6 else 2 if share >= 0.4 else 1 if share >= 0.15 else 0
    return _json(
        {
            "score": score,
            "noncommittal": False,
            "explanation": f"The answer uses {share:.0%} of the question's content words.",
        }
    )


def _question_parts(question: str) -> list[str]:
    parts = re.split(r",\s*and\s+|\s+and\s+(?=what|when|where|who|how|which|why)|[?;]", question)
    return [p.strip() for p in parts if content_words(p)]


@responder("judges/completeness")
def completeness(body: dict[str, Any]) -> str:
    data = fenced(body)
    reference, answer = _one(data, "reference"), _one(data, "answer")
    points = split_sentences(reference) if reference else _question_parts(_one(data, "question"))
    out = []
    for p in points:
        share = covered(p, answer)
        verdict = "covered" if share >= SUPPORT else "partial" if share >= 0.4 else "missing"
        out.append({"point": p, "verdict": verdict})
    return _json({"key_points": out})


@responder("judges/context_recall")
def context_recall(body: dict[str, Any]) -> str:
    data = fenced(body)
    contexts = data.get("context", [])
    claims = [
        {"claim": s, "chunks": [j + 1 for j, c in enumerate(contexts) if supports(s, c)]}
        for s in split_sentences(_one(data, "reference"))
    ]
    return _json({"claims": claims})


@responder("judges/context_precision")
def context_precision(body: dict[str, Any]) -> str:
    data = fenced(body)
    reference = split_sentences(_one(data, "reference"))
    question = _one(data, "question")
    chunks = []
    for j, c in enumerate(data.get("context", []), start=1):
        if reference:
            relevant = any(supports(s, c) for s in reference)
        else:
            relevant = covered(question, c) >= SUPPORT
        chunks.append({"id": j, "relevant": relevant})
    return _json({"chunks": chunks})


@responder("generate/answer")
def generate_answer(body: dict[str, Any]) -> str:
    """The context sentence sharing most content words with the question, cited as [n]."""
    data = fenced(body)
    question = set(content_words(_one(data, "question")))
    best: tuple[float, str, int] = (0.0, "", 0)
    for j, c in enumerate(data.get("context", []), start=1):
        for sent in split_sentences(c):
            share = len(question & set(content_words(sent))) / max(1, len(question))
            if share > best[0]:
                best = (share, sent, j)
    if best[0] < 0.3:
        m = re.search(r"reply exactly: (.+)$", last_user_text(body), re.M)
        return m.group(1).strip() if m else NO_ANSWER
    return f"{best[1]} [{best[2]}]"
