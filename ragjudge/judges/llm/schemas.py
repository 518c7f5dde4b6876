"""Structured outputs of the LLM judges (what the model must return, as pydantic models).

Context ids in every output are the 1-based numbers shown in the prompt; the judges turn them
into the 0-based ``supporting_chunks`` / ``ChunkVerdict.index`` of the evidence.

Every field is required and has no default: the JSON schema sent to the endpoint
(``model_json_schema()`` of these classes) then forces every key a constrained decoder must
produce, and it is the same contract the reply is validated against (strictly). What a schema
cannot say (a context id within 1..n, a supported claim naming a context) is the judge's
``validate``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ClaimOut(BaseModel):
    claim: str = Field(min_length=1)
    verdict: Literal["supported", "partial", "unsupported"]
    chunks: list[int]


class FaithfulnessOut(BaseModel):
    claims: list[ClaimOut]


class RelevancyOut(BaseModel):
    score: int = Field(ge=0, le=3)
    noncommittal: bool
    explanation: str = Field(min_length=1)


class KeyPointOut(BaseModel):
    point: str = Field(min_length=1)
    verdict: Literal["covered", "partial", "missing"]


class CompletenessOut(BaseModel):
    key_points: list[KeyPointOut]


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
