"""Registry of scripted responders for the local OpenAI-compatible test server.

A responder answers one chat-completions request deterministically. It is chosen by the
prompt template named in the ``X-Ragjudge-Template`` header (``name@version``; the name part is
matched), or, for prompts from other tools (ragas), by a predicate on the request body.

Contract: ``fn(request_body: dict) -> str`` returns the assistant message content for one
choice. The server builds ``n`` choices, usage counts and the HTTP envelope itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Responder = Callable[[dict[str, Any]], str]
Predicate = Callable[[dict[str, Any]], bool]

_BY_TEMPLATE: dict[str, Responder] = {}
_BY_PREDICATE: list[tuple[str, Predicate, Responder]] = []


def responder(template: str) -> Callable[[Responder], Responder]:
    """Register ``fn`` for requests whose template header names ``template``."""

    def deco(fn: Responder) -> Responder:
        _BY_TEMPLATE[template] = fn
        return fn

    return deco


def content_responder(label: str, predicate: Predicate) -> Callable[[Responder], Responder]:
    """Register ``fn`` for requests (without a known template) that ``predicate`` accepts."""

    def deco(fn: Responder) -> Responder:
        _BY_PREDICATE.append((label, predicate, fn))
        return fn

    return deco


def find(template: str | None, body: dict[str, Any]) -> tuple[str, Responder] | None:
    """The responder for a request, with the label it was found under, or None."""
    if template:
        name = template.split("@", 1)[0]
        if name in _BY_TEMPLATE:
            return name, _BY_TEMPLATE[name]
    for label, predicate, fn in _BY_PREDICATE:
        if predicate(body):
            return label, fn
    return None


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message (string or content-part list)."""
    for msg in reversed(body.get("messages", [])):
        if msg.get("role") == "user":
            content = msg.get("content", "")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content)
    return ""
