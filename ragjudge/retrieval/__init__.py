"""Retrieval and re-ranking: BM25, dense and hybrid first stages, a LangChain adapter,
rerankers (late interaction, cross-encoder, LLM listwise) and multi-stage pipelines.

    r = build_retriever("hybrid")
    p = Pipeline(r, stages=[(None, 50), (build_reranker("late-interaction"), 10)])
    p.index(documents); rankings = p.retrieve({"q1": "..."}, k=10)

See docs/retrieval.md.
"""

from __future__ import annotations

from typing import Any

from ragjudge.errors import ConfigError
from ragjudge.protocols import Reranker, Retriever

from .pipeline import Pipeline

RETRIEVERS = ("bm25", "dense", "hybrid")
RERANKERS = ("late-interaction", "cross-encoder:MODEL_OR_PATH", "llm")


def build_retriever(kind: str, **options: Any) -> Retriever:
    """``bm25`` (k1, b), ``dense`` (encoder: plain | onnx | onnx-int8 | judges | an Encoder;
    cache) or ``hybrid`` (fusion: rrf | score, rrf_k, weights, depth, plus ``bm25`` / ``dense``
    option dicts); ``langchain`` (retriever=a BaseRetriever)."""
    if kind == "bm25":
        from .bm25 import BM25Retriever

        return BM25Retriever(**options)
    if kind == "dense":
        from .dense import DenseRetriever

        return DenseRetriever(**options)
    if kind == "hybrid":
        from .bm25 import BM25Retriever
        from .dense import DenseRetriever
        from .hybrid import HybridRetriever

        opts = dict(options)
        dense_opts = dict(opts.pop("dense", {}) or {})
        if "encoder" in opts:
            dense_opts["encoder"] = opts.pop("encoder")
        sparse = BM25Retriever(**dict(opts.pop("bm25", {}) or {}))
        return HybridRetriever(DenseRetriever(**dense_opts), sparse, **opts)
    if kind == "langchain":
        from .langchain import LangChainRetriever

        return LangChainRetriever(**options)
    raise ConfigError(f"unknown retriever {kind!r}; known: {', '.join(RETRIEVERS)}, langchain")


def build_reranker(spec: str, **options: Any) -> Reranker:
    """``late-interaction`` (encoder, blend), ``cross-encoder:MODEL_OR_PATH`` (batch_size,
    max_length) or ``llm`` (client, window, step, model)."""
    if spec == "late-interaction":
        from .rerank.late_interaction import LateInteractionReranker

        return LateInteractionReranker(**options)
    if spec.startswith("cross-encoder"):
        from .rerank.cross_encoder import CrossEncoderReranker

        _, _, model = spec.partition(":")
        return CrossEncoderReranker(model, **options)
    if spec == "llm" or spec.startswith("llm:"):
        from .rerank.llm import LLMListwiseReranker

        _, _, model = spec.partition(":")
        if model:
            options.setdefault("model", model)
        return LLMListwiseReranker(**options)
    raise ConfigError(f"unknown reranker {spec!r}; known: {', '.join(RERANKERS)}")


__all__ = ["RERANKERS", "RETRIEVERS", "Pipeline", "build_reranker", "build_retriever"]
