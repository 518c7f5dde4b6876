"""The JSON schema sent for structured output is the contract the reply is validated against:
for every judge and test-set output, each object in the schema requires every one of its
properties (a constrained decoder must then produce them all) and the validator rejects a reply
missing any of them, while the schema's own example of a complete reply validates."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from ragjudge.judges.llm import schemas
from ragjudge.llm import structured as so
from ragjudge.testset.writers import GeneratedQuestion

OUTPUTS = [
    c
    for _, c in inspect.getmembers(schemas, inspect.isclass)
    if issubclass(c, BaseModel) and c.__module__ == schemas.__name__
] + [
    GeneratedQuestion,
    schemas.faithfulness_out(3),
    schemas.context_recall_out(3),
    schemas.context_precision_out(3),
]


def _objects(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        found = [node] if node.get("type") == "object" else []
        return found + [o for v in node.values() for o in _objects(v)]
    if isinstance(node, list):
        return [o for v in node for o in _objects(v)]
    return []


def _example(schema: dict[str, Any], node: dict[str, Any]) -> Any:
    """A minimal instance of ``node`` that the schema allows."""
    if "$ref" in node:
        return _example(schema, schema["$defs"][node["$ref"].split("/")[-1]])
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type")
    if kind == "object":
        return {k: _example(schema, v) for k, v in node["properties"].items()}
    if kind == "array":
        return [_example(schema, node["items"])] * max(1, node.get("minItems", 0))
    if kind == "string":
        return "x" * max(1, node.get("minLength", 0))
    if kind == "integer":
        return node.get("minimum", 1)
    if kind == "boolean":
        return False
    raise AssertionError(f"unexpected schema node {node}")


def test_context_ids_are_an_enum_of_the_contexts_shown() -> None:
    """A grammar-based decoder (llama.cpp) enforces ``enum`` but may ignore ``maximum``:
    context ids are offered as the numbers 1..n only, and precision gets exactly n verdicts."""
    faith = schemas.faithfulness_out(3).model_json_schema()
    assert faith["$defs"]["ClaimOut3"]["properties"]["chunks"]["items"]["enum"] == [1, 2, 3]
    prec = schemas.context_precision_out(2).model_json_schema()
    assert prec["properties"]["chunks"]["minItems"] == prec["properties"]["chunks"]["maxItems"] == 2
    with pytest.raises(ValidationError):
        schemas.context_recall_out(2).model_validate(
            {"claims": [{"claim": "c", "chunks": [3]}]}, strict=True
        )


def test_outputs_are_found() -> None:
    assert {c.__name__ for c in OUTPUTS} >= {"FaithfulnessOut", "RelevancyOut", "CriteriaOut"}


@pytest.mark.parametrize("model", OUTPUTS, ids=lambda c: c.__name__)
def test_schema_sent_requires_what_the_validator_requires(model: type[BaseModel]) -> None:
    sent = so.request_fields(model, "json_schema")
    assert sent is not None
    schema = sent["response_format"]["json_schema"]["schema"]
    assert schema == model.model_json_schema()
    for obj in _objects(schema):
        assert set(obj.get("required", [])) == set(obj["properties"]), obj.get("title")
    example = _example(schema, schema)
    model.model_validate(example, strict=True)
    for key in example:
        partial = {k: v for k, v in example.items() if k != key}
        with pytest.raises(ValidationError):
            model.model_validate(partial, strict=True)
