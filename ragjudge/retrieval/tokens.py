"""Token embeddings of any ragjudge encoder, for late interaction.

Contract of ``encode_tokens(encoder, texts)``: one (n_tokens, dim) float32 matrix per text,
each row L2-normalised, with special ([CLS], [SEP]) and padding tokens dropped.
An encoder with its own ``encode_tokens`` (``ragjudge.embedding.OnnxEncoder``) is used as is; a
``SentenceTransformerEncoder`` goes through sentence-transformers with
``output_value="token_embeddings"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragjudge.errors import ConfigError


def _normalise(tok: np.ndarray) -> np.ndarray:
    norms = np.clip(np.linalg.norm(tok, axis=1, keepdims=True), 1e-12, None)
    return (tok / norms).astype(np.float32)


def encode_tokens(encoder: Any, texts: Sequence[str]) -> list[np.ndarray]:
    own = getattr(encoder, "encode_tokens", None)
    if callable(own):
        return list(own(texts))
    model = getattr(encoder, "model", None)
    if model is None or not hasattr(model, "encode"):
        raise ConfigError(
            f"encoder {getattr(encoder, 'name', encoder)!r} cannot give token embeddings"
        )
    if not texts:
        return []
    tok = model.tokenizer(
        list(texts),
        truncation=True,
        max_length=model.max_seq_length,
        return_special_tokens_mask=True,
    )
    outs = model.encode(
        list(texts),
        output_value="token_embeddings",
        batch_size=getattr(encoder, "batch_size", 32),
        convert_to_numpy=False,
        show_progress_bar=False,
    )
    result: list[np.ndarray] = []
    for i, emb in enumerate(outs):
        arr = emb.detach().cpu().numpy() if hasattr(emb, "detach") else np.asarray(emb)
        special = np.asarray(tok["special_tokens_mask"][i], dtype=bool)
        n = min(len(arr), len(special))
        result.append(_normalise(arr[:n][~special[:n]]))
    return result
