"""Scripted answer to the ``rerank/listwise`` prompt: passages ordered by how many of the
query's content words they contain (ties: given order), as ``[i] > [j] > ...``.

A passage containing ``IGNORE-ME`` is ranked last, and one containing ``BAD-IDS`` makes the
reply name an out-of-range and a repeated identifier, so the parser's repair is exercised.
"""

from __future__ import annotations

from typing import Any

from ragjudge.testing.responders import responder
from ragjudge.testing.responders_judges import fenced
from ragjudge.text import content_words


@responder("rerank/listwise")
def listwise(body: dict[str, Any]) -> str:
    data = fenced(body)
    query = set(content_words(" ".join(data.get("question", []))))
    passages = data.get("context", [])

    def key(i: int) -> tuple[int, int]:
        text = passages[i]
        overlap = len(query & set(content_words(text)))
        return (-1 if "IGNORE-ME" in text else overlap, -i)

    order = sorted(range(len(passages)), key=key, reverse=True)
    ids = [f"[{i + 1}]" for i in order]
    if any("BAD-IDS" in p for p in passages):
        ids = [f"[{len(passages) + 5}]", ids[0], *ids]
    return " > ".join(ids)
