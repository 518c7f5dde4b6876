"""Cross-encoder reranking (sentence-transformers ``CrossEncoder``), model given by the user.

Nothing is bundled and nothing is downloaded: ``HF_HUB_OFFLINE=1`` is set before loading, a
path that does not exist is a ``ConfigError`` before any load, and a hub name must already be in
the local Hugging Face cache. score(q, d) = the model's relevance logit for (q, title. text).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragjudge.embedding import quiet_loading
from ragjudge.errors import ConfigError
from ragjudge.schema import Document

from ..base import doc_text
from .base import PointwiseReranker


def _hub_id(model: str) -> bool:
    parts = model.split("/")
    return len(parts) == 2 and all(parts) and not model.startswith((".", "/", "~"))


class CrossEncoderReranker(PointwiseReranker):
    def __init__(self, model: str, *, batch_size: int = 32, max_length: int | None = None) -> None:
        if not model:
            raise ConfigError("cross-encoder needs a model: cross-encoder:NAME_OR_PATH")
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        expanded = Path(model).expanduser()
        if not expanded.exists() and not _hub_id(model):
            raise ConfigError(
                f"cross-encoder model path {model!r} does not exist (nothing is downloaded; "
                "give a local folder or a model already in the Hugging Face cache)"
            )
        self.model_name = str(expanded) if expanded.exists() else model
        self.name = f"cross-encoder({Path(self.model_name).name})"
        self.model_key = f"cross-encoder:{self.model_name}"
        self.batch_size = batch_size
        try:
            from sentence_transformers import CrossEncoder

            with quiet_loading():
                self.model: Any = CrossEncoder(
                    self.model_name, device="cpu", max_length=max_length, local_files_only=True
                )
        except (OSError, ValueError) as exc:
            why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ConfigError(
                f"cannot load cross-encoder {model!r} offline: {why} Nothing is downloaded; "
                "give a local folder or a model already in the Hugging Face cache"
            ) from None
        super().__init__()

    def _score(self, query: str, docs: list[Document]) -> Sequence[float]:
        pairs = [(query, doc_text(d)) for d in docs]
        scores = self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        return [float(s) for s in scores]
