"""Structured outputs of the LLM judges (what the model must return, as pydantic models).

Context ids in every output are the 1-based numbers shown in the prompt; the judges turn them
into the 0-based ``supporting_chunks`` / ``ChunkVerdict.index`` of the evidence.

Every field is required and has no default: the JSON schema sent to the endpoint
(``model_json_schema()`` of these classes) then forces every key a constrained decoder must
produce, and it is the same contract the reply is validated against (strictly). What a schema
cannot say (a supported claim naming a context, no context judged twice) is the judge's
``validate``. Outputs naming contexts come per number of contexts n (``faithfulness_out(n)``
...): their ids are ``Literal[1, ..., n]`` (an ``enum`` in the schema, which grammar-based
decoders such as llama.cpp enforce, where ``minimum``/``maximum`` may be ignored), and context
precision's list holds exactly n verdicts.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model


class ClaimOut(BaseModel):
    claim: str = Field(min_length=1)
    verdict: Literal["supported", "partial", "unsupported"]
    chunks: list[int]


class FaithfulnessOut(BaseModel):
    claims: list[ClaimOut]


class RelevancyOut(BaseModel):
    score: Literal[0, 1, 2, 3]
    noncommittal: bool
    explanation: str = Field(min_length=1)


class KeyPointOut(BaseModel):
    point: str = Field(min_length=1)
    verdict: Literal["covered", "partial", "missing"]


class CompletenessOut(BaseModel):
    key_points: list[KeyPointOut] = Field(min_length=1)
    """A reference makes at least one point."""


class RecallClaimOut(BaseModel):
    claim: str = Field(min_length=1)
    chunks: list[int]


class ContextRecallOut(BaseModel):
    claims: list[RecallClaimOut]


class ChunkOut(BaseModel):
    id: int
    relevant: bool


class ContextPrecisionOut(BaseModel):
    chunks: list[ChunkOut]


class CriteriaOut(BaseModel):
    verdict: Literal["yes", "partly", "no"]
    explanation: str = Field(min_length=1)
    quotes: list[str] = Field(max_length=3)


def _ids(n: int) -> Any:
    """``Literal[1, ..., n]`` (at least ``Literal[1]``)."""
    return Literal.__getitem__(tuple(range(1, max(n, 1) + 1)))


def _id_list(n: int) -> Any:
    """``list[Literal[1, ..., n]]``."""
    return list.__class_getitem__(_ids(n))


@cache
def faithfulness_out(n: int) -> type[FaithfulnessOut]:
    """``FaithfulnessOut`` whose context ids are 1..n."""
    claim = create_model(f"ClaimOut{n}", __base__=ClaimOut, chunks=(_id_list(n), ...))
    return create_model(f"FaithfulnessOut{n}", __base__=FaithfulnessOut, claims=(list[claim], ...))


@cache
def context_recall_out(n: int) -> type[ContextRecallOut]:
    """``ContextRecallOut`` whose context ids are 1..n."""
    claim = create_model(f"RecallClaimOut{n}", __base__=RecallClaimOut, chunks=(_id_list(n), ...))
    return create_model(
        f"ContextRecallOut{n}", __base__=ContextRecallOut, claims=(list[claim], ...)
    )


@cache
def context_precision_out(n: int) -> type[ContextPrecisionOut]:
    """``ContextPrecisionOut`` with exactly n verdicts whose ids are 1..n."""
    chunk = create_model(f"ChunkOut{n}", __base__=ChunkOut, id=(_ids(n), ...))
    return create_model(
        f"ContextPrecisionOut{n}",
        __base__=ContextPrecisionOut,
        chunks=(list[chunk], Field(min_length=n, max_length=n)),
    )
