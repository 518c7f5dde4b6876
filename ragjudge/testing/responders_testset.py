"""Scripted answers to the test-set prompts.

``testset/answered``: a context answers the question when it holds >= ``ANSWERS`` of the
question's content words.

``testset/generate``: a template question (``ragjudge.testset.templates``) about the fenced
passages, of the type named on the prompt's ``Question type:`` line, as
``{"question", "answer", "short_answer"}``.

Deterministic per request (the seed is a hash of the type and passages). Like a real model it
sometimes errs, so that the filters have work: when the hash modulo 20 is 0 the question copies
the first passage's first sentence, when it is 1 the short answer is appended to the question
(a leak). A passage no template fits gets "What does <title> describe?" answered by its first
sentence. Unanswerable questions ask a count with a unit the passages never use
(``FOREIGN_UNITS``).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from ragjudge.schema import Document
from ragjudge.testing.responders import last_user_text, responder
from ragjudge.testing.responders_judges import covered, fenced
from ragjudge.text import content_words, split_sentences

ANSWERS = 0.8
_TYPE = re.compile(r"^Question type: (\w+)", re.M)
FOREIGN_UNITS = ("visitors", "employees", "patents", "ships", "awards", "branches")


@responder("testset/generate")
def generate(body: dict[str, Any]) -> str:
    from ragjudge.testset import templates

    text = last_user_text(body)
    m = _TYPE.search(text)
    qtype = m.group(1) if m else "factoid"
    passages = fenced(body).get("context", [])
    docs = [Document(id=f"p{i + 1}", text=t) for i, t in enumerate(passages)]
    digest = hashlib.sha256(f"{qtype}\n{text}".encode()).digest()
    roll = int.from_bytes(digest[:4], "little")
    rng = random.Random(roll)
    ctx = templates.TemplateContext.of(docs)
    words = {w for t in passages for w in content_words(t)}
    ctx.units = [u for u in FOREIGN_UNITS if u not in words]
    cand = None
    if len(docs) >= 2:
        cand = templates.two_passage(qtype, docs[0], docs[1], ctx, rng)
    elif docs:
        cand = templates.one_passage(qtype, docs[0], ctx, rng)
    first = split_sentences(passages[0])[0] if passages and split_sentences(passages[0]) else ""
    if cand is None:
        topic = (templates.names(first) or ["this subject"])[0]
        question, answer, short = f"What does {topic} describe?", first, ""
    else:
        question, answer, short = cand.question, cand.reference, cand.short_answer
    if qtype == "unanswerable":
        answer, short = "The passage does not contain the answer.", ""
    elif roll % 20 == 0 and first:
        question = first.rstrip(".") + "?"
    elif roll % 20 == 1 and short:
        question = f"{question.rstrip('?')} ({short})?"
    return json.dumps({"question": question, "answer": answer, "short_answer": short})


@responder("testset/answered")
def answered(body: dict[str, Any]) -> str:
    data = fenced(body)
    question = data.get("question", [""])[0]
    chunks = [
        {"id": j, "relevant": covered(question, c) >= ANSWERS}
        for j, c in enumerate(data.get("context", []), start=1)
    ]
    return json.dumps({"chunks": chunks})
