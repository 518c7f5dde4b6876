"""Dense first stage: the bundled bi-encoder, exact cosine search.

score(q, d) = cos(E(q), E(d)) = E(q) . E(d) (vectors are L2-normalised). Document vectors are
cached on disk by (encoder name, content hash) (``VectorCache``), so a second run encodes
nothing and a changed corpus encodes only new or edited documents; ``encoded`` counts the
documents this retriever actually encoded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragjudge.errors import ConfigError
from ragjudge.protocols import Encoder
from ragjudge.schema import Document, Ranking

from .base import check_documents, check_queries, clamp_k, content_hash, doc_text, make_ranking
from .cache import VectorCache
from .progress import progress_bar

ENCODERS = ("plain", "onnx", "onnx-int8", "judges")


def resolve_encoder(encoder: Encoder | str | None) -> Any:
    """An ``Encoder``: the given object, or by name ``plain`` (sentence-transformers, the
    default), ``onnx`` or ``onnx-int8`` (ONNX Runtime, ``ragjudge.embedding.load_onnx_encoder``:
    the float32 export, or the int8 file the offline judges use) or ``judges`` (the offline
    judges' encoder, ``ragjudge.embedding.load_judge_encoder()``, whatever
    ``$RAGJUDGE_JUDGE_PRECISION`` makes it: the same instance the judges use, so a run holds one
    model; by default the shipped int8 file, no torch import)."""
    if encoder is None or encoder == "plain":
        from ragjudge.embedding import load_encoder

        return load_encoder()
    if encoder == "judges":
        from ragjudge.embedding import load_judge_encoder

        return load_judge_encoder()
    if encoder in ("onnx", "onnx-int8"):
        from ragjudge.embedding import load_onnx_encoder

        return load_onnx_encoder(int8=encoder == "onnx-int8")
    if isinstance(encoder, str):
        raise ConfigError(f"unknown encoder {encoder!r}; known: {', '.join(ENCODERS)}")
    return encoder


class DenseRetriever:
    """Bi-encoder retrieval with an on-disk embedding cache."""

    def __init__(self, *, encoder: Encoder | str | None = None, cache: bool = True) -> None:
        self.encoder: Any = resolve_encoder(encoder)
        self.encoder_spec: Encoder | str = "plain" if encoder is None else encoder
        """What ``resolve_encoder`` built the encoder from (another process builds its own)."""
        self.name = f"dense({self.encoder.name})"
        self.cache = VectorCache(self.encoder.name) if cache else None
        self._ids: list[str] = []
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self.encoded = 0

    def _encode(self, texts: list[str]) -> list[np.ndarray]:
        return list(self.encoder.encode(texts))

    def index(self, documents: Sequence[Document]) -> None:
        docs = check_documents(documents, self.name)
        texts = [doc_text(d) for d in docs]
        with progress_bar(f"encoding {len(docs)} documents", len(docs)) as advance:
            if self.cache is None:
                vecs = []
                for start in range(0, len(texts), 256):
                    vecs.extend(self._encode(texts[start : start + 256]))
                    advance(len(texts[start : start + 256]))
                self.encoded += len(texts)
            else:
                before = self.cache.encoded
                hashes = [content_hash(d) for d in docs]
                vecs = self.cache.lookup(hashes, texts, self._encode, progress=advance)
                self.encoded += self.cache.encoded - before
        self._ids = [d.id for d in docs]
        self._matrix = np.vstack(vecs).astype(np.float32)

    def retrieve(self, queries: Mapping[str, str], k: int) -> dict[str, Ranking]:
        qs = check_queries(queries, self.name)
        if not self._ids:
            raise ConfigError(f"{self.name}: call index(documents) before retrieve")
        k_ = clamp_k(k, len(self._ids), self.name)
        qids = list(qs)
        qvecs = np.asarray(self.encoder.encode([qs[q] for q in qids]), dtype=np.float32)
        sims = qvecs @ self._matrix.T
        out: dict[str, Ranking] = {}
        for row, qid in enumerate(qids):
            s = sims[row]
            top = np.argpartition(-s, k_ - 1)[:k_] if k_ < len(s) else np.arange(len(s))
            out[qid] = make_ranking(qid, ((self._ids[i], float(s[i])) for i in top), k_)
        return out
