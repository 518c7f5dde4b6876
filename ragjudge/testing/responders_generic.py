"""Generic responders for the local test server (tests and benchmarks of the LLM layer).

- ``test/echo``: the last user message, verbatim.
- ``test/json``: the last user message, which must itself be the JSON to return.
- ``test/sum``: ``{"numbers": [...], "total": sum}`` of the integers in the last user message.
- ``generic`` (fallback of ``FakeLLMServer(unknown="generic")``): for a json_schema request, a
  minimal instance of the schema; else the echo.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ragjudge.testing.responders import last_user_text, responder

_INT = re.compile(r"-?\d+")


@responder("test/echo")
def echo(body: dict[str, Any]) -> str:
    return last_user_text(body)


@responder("test/json")
def json_verbatim(body: dict[str, Any]) -> str:
    return last_user_text(body).strip()


@responder("test/sum")
def add(body: dict[str, Any]) -> str:
    nums = [int(x) for x in _INT.findall(last_user_text(body))]
    return json.dumps({"numbers": nums, "total": sum(nums)})


def example(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """A minimal value that validates against a JSON schema (pydantic's dialect)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return example(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return example(schema[key][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: example(v, defs) for k, v in props.items()}
    if kind == "array":
        return [example(schema["items"], defs)] * int(schema.get("minItems", 0))
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0.0))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "example"


def generic(body: dict[str, Any]) -> str:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return json.dumps(example(fmt["json_schema"]["schema"]))
    return last_user_text(body)
