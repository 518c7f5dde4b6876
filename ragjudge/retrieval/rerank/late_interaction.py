"""Late-interaction (ColBERT-style MaxSim) reranking with the bundled bi-encoder's token vectors.

score(q, d) = (1 / |q|) * sum over query tokens i of max over document tokens j of q_i . d_j,
with every token vector L2-normalised and [CLS]/[SEP]/padding dropped. The bundled MiniLM was
trained for mean pooling, not for MaxSim, so ``blend`` can mix in the first-stage evidence:
final = (1 - blend) * maxsim + blend * cos(mean-pooled q, mean-pooled d) when ``blend`` > 0
(both are cosine-scale; pooled document vectors come from the dense retriever's cache).
Document token matrices are cached on disk (float16) by content hash.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragjudge.errors import ConfigError
from ragjudge.schema import Document

from ..base import content_hash, doc_text
from ..cache import VectorCache
from ..dense import resolve_encoder
from ..tokens import encode_tokens
from .base import PointwiseReranker


def maxsim(query_tokens: np.ndarray, doc_tokens: np.ndarray) -> float:
    """Mean over query tokens of the best cosine with any document token (0 if either is empty)."""
    if len(query_tokens) == 0 or len(doc_tokens) == 0:
        return 0.0
    return float((query_tokens @ doc_tokens.T).max(axis=1).mean())


class LateInteractionReranker(PointwiseReranker):
    def __init__(self, *, encoder: Any = None, blend: float = 0.0) -> None:
        if not 0.0 <= blend <= 1.0:
            raise ConfigError(f"late-interaction blend must be in [0, 1], got {blend}")
        self.encoder: Any = resolve_encoder(encoder)
        self.blend = blend
        self.name = f"late-interaction({self.encoder.name},blend={blend})"
        self.model_key = self.name
        self.tokens = VectorCache(self.encoder.name, kind="tokens")
        self.pooled = VectorCache(self.encoder.name)
        super().__init__()

    def _doc_tokens(self, docs: list[Document]) -> list[np.ndarray]:
        return self.tokens.lookup(
            [content_hash(d) for d in docs],
            [doc_text(d) for d in docs],
            lambda texts: encode_tokens(self.encoder, texts),
        )

    def _score(self, query: str, docs: list[Document]) -> Sequence[float]:
        q = encode_tokens(self.encoder, [query])[0]
        scores = [maxsim(q, d) for d in self._doc_tokens(docs)]
        if self.blend > 0:
            qv = np.asarray(self.encoder.encode([query]), dtype=np.float32)[0]
            dv = self.pooled.lookup(
                [content_hash(d) for d in docs],
                [doc_text(d) for d in docs],
                lambda texts: list(self.encoder.encode(texts)),
            )
            cos = np.vstack(dv) @ qv
            scores = [
                (1 - self.blend) * s + self.blend * float(c)
                for s, c in zip(scores, cos, strict=True)
            ]
        return scores
