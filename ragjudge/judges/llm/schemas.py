"""Structured outputs of the LLM judges (what the model must return, as pydantic models).

Context ids in every output are the 1-based numbers shown in the prompt; the judges turn them
into the 0-based ``supporting_chunks`` / ``ChunkVerdict.index`` of the evidence.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ClaimOut(BaseModel):
    claim: str = Field(min_length=1)
    verdict: Literal["supported", "partial", "unsupported"]
    chunks: list[int] = Field(default_factory=list)


class FaithfulnessOut(BaseModel):
    claims: list[ClaimOut]


class RelevancyOut(BaseModel):
    score: int = Field(ge=0, le=3)
    noncommittal: bool = False
    explanation: str = ""


class KeyPointOut(BaseModel):
    point: str = Field(min_length=1)
    verdict: Literal["covered", "partial", "missing"]


class CompletenessOut(BaseModel):
    key_points: list[KeyPointOut]


class RecallClaimOut(BaseModel):
    claim: str = Field(min_length=1)
    chunks: list[int] = Field(default_factory=list)


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
    quotes: list[str] = Field(default_factory=list, max_length=3)
