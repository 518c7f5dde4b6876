"""Structured output: the request fields of each mode, the instruction for the modes that
need one, extraction and strict validation of the reply, and the repair message.

Modes, in the order ``auto`` tries them (``MODES``):

- ``json_schema``: ``response_format: {"type": "json_schema", "json_schema": {...}}``;
- ``json_object``: ``response_format: {"type": "json_object", "schema": {...}}`` (llama.cpp
  and vLLM constrain decoding to the schema; others ignore the key and give plain JSON mode);
- ``tools``: one function whose parameters are the schema, forced by ``tool_choice``; the
  reply is the call's arguments;
- ``prompt``: no request field, the schema in the system message, the reply validated.

The schema sent is ``schema.model_json_schema()`` of the same pydantic class that validates
the reply (computed once per class, ``schema_dict``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(?P<body>.*?)\n?```\s*$", re.S)
_NAME = re.compile(r"[^a-zA-Z0-9_-]")


@cache
def schema_dict(schema: type[BaseModel]) -> dict[str, Any]:
    return schema.model_json_schema()


@cache
def schema_json(schema: type[BaseModel]) -> str:
    """Canonical JSON of the class's schema (enters cache keys and prompts)."""
    return json.dumps(schema_dict(schema), sort_keys=True, separators=(",", ":"))


MODES = ("json_schema", "json_object", "tools", "prompt")
"""Structured-output modes, most constrained first: the order ``auto`` tries them in."""


def _name(schema: type[BaseModel]) -> str:
    return _NAME.sub("_", schema.__name__)[:64] or "output"


def request_fields(schema: type[BaseModel], mode: str) -> dict[str, Any] | None:
    """The request body fields that ask for ``mode`` (None for prompt-only)."""
    if mode == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": _name(schema),
                    "schema": schema_dict(schema),
                    "strict": False,
                },
            }
        }
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema_dict(schema)}}
    if mode == "tools":
        name = _name(schema)
        return {
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": "Record the answer.",
                        "parameters": schema_dict(schema),
                    },
                }
            ],
            "tool_choice": {"type": "function", "function": {"name": name}},
        }
    return None


def needs_instruction(mode: str) -> bool:
    """Whether the schema goes into the system message too (every mode but json_schema:
    json_object and tools may be honoured loosely, prompt-only relies on it)."""
    return mode != "json_schema"


def instruction(schema: type[BaseModel]) -> str:
    return (
        "Reply with one JSON object only (no prose, no code fence) that matches this JSON "
        f"schema:\n{schema_json(schema)}"
    )


def with_instruction(
    messages: list[dict[str, Any]], schema: type[BaseModel]
) -> list[dict[str, Any]]:
    """``messages`` with the JSON instruction appended to the system message (or added as
    one); used in json_object and prompt-only modes."""
    text = instruction(schema)
    out = [dict(m) for m in messages]
    for m in out:
        if m.get("role") == "system" and isinstance(m.get("content"), str):
            m["content"] = f"{m['content']}\n\n{text}"
            return out
    return [{"role": "system", "content": text}, *out]


def extract_json(text: str) -> str:
    """The JSON part of a reply: a code fence is unwrapped, surrounding prose dropped (from
    the first ``{`` to the last ``}``)."""
    m = _FENCE.match(text)
    if m:
        text = m["body"]
    text = text.strip()
    if text.startswith("{"):
        return text
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text


def conforms(text: str, schema: type[BaseModel]) -> bool:
    """Whether the JSON part of a reply is valid JSON matching ``schema`` (the caller's own
    check aside): a failure of this kind is the endpoint's structured mode not holding."""
    try:
        schema.model_validate_json(extract_json(text), strict=True)
    except ValidationError:
        return False
    return True


def parse(
    text: str,
    schema: type[T],
    validate: Callable[[T], str | None] | None = None,
) -> tuple[T | None, str | None]:
    """``(value, None)`` or ``(None, error message)``: strict validation of the JSON, then the
    caller's check."""
    body = extract_json(text)
    try:
        value = schema.model_validate_json(body, strict=True)
    except ValidationError as exc:
        errs = exc.errors(include_url=False)
        if errs and errs[0]["type"] == "json_invalid":
            return None, f"the reply is not valid JSON ({errs[0]['msg']})"
        shown = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in errs[:5]
        )
        return None, f"the reply does not match the schema: {shown}"
    if validate is not None:
        problem = validate(value)
        if problem:
            return None, problem
    return value, None


def repair_messages(
    messages: list[dict[str, Any]], bad_reply: str, problem: str
) -> list[dict[str, Any]]:
    """The one repair call: the conversation, the unusable reply and what was wrong with it."""
    return [
        *messages,
        {"role": "assistant", "content": bad_reply},
        {
            "role": "user",
            "content": f"Your reply could not be used: {problem}. Reply again with only the "
            "corrected JSON object.",
        },
    ]
