"""The fast encoding path: the bundled model exported to ONNX and run with ONNX Runtime.

Same maths as the sentence-transformers pipeline of all-MiniLM-L6-v2 (WordPiece, truncation at
the model's ``max_seq_length`` = 256, mean pooling over the attention mask, L2 normalisation);
what makes it faster:

- texts are sorted by token length and batched in small batches (8), so a batch pads only to
  its own longest text and its attention tensors stay in cache (measured on SciFact abstracts:
  batches of 8 encode 1.4-1.8x faster than batches of 32);
- the model is exported with plain ("eager") attention, which ONNX Runtime fuses and runs
  faster than the exported graph of torch's scaled-dot-product attention;
- ONNX Runtime with every graph optimisation, one session per process;
- ``quantize=True``: int8 dynamic quantisation of the weights (``onnxruntime.quantization``),
  which changes the vectors slightly, hence its own cache name (``...-onnx-int8``).

The ONNX file is exported once with ``torch.onnx`` from the installed model folder (no download)
into ``RAGJUDGE_HOME/models/`` and reused afterwards.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ragjudge.embedding import BUNDLED_MODEL_NAME, _offline, bundled_model_path, quiet_loading
from ragjudge.home import state_path

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
EXPORT_VERSION = "eager-v2"
"""Part of the exported file names: a new export recipe gets new files, never a stale one."""


def _max_seq_length(model_dir: Path) -> int:
    cfg = model_dir / "sentence_bert_config.json"
    if cfg.exists():
        return int(json.loads(cfg.read_text()).get("max_seq_length", 256))
    return 256


def export_onnx(model_dir: Path, out: Path) -> Path:
    """Export the transformer of ``model_dir`` (last hidden state) to ``out`` with torch.onnx."""
    _offline()
    import torch
    from transformers import AutoModel

    with quiet_loading():
        model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            return self.inner(input_ids=ids, attention_mask=mask, token_type_ids=types)[0]

    dummy = torch.ones((2, 8), dtype=torch.long)
    tmp = out.with_suffix(".tmp.onnx")
    axes = {n: {0: "batch", 1: "seq"} for n in (*INPUTS, "hidden")}
    torch.onnx.export(
        _Hidden(model),
        (dummy, dummy, torch.zeros_like(dummy)),
        str(tmp),
        input_names=list(INPUTS),
        output_names=["hidden"],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )
    tmp.replace(out)
    return out


def quantize_onnx(src: Path, out: Path) -> Path:
    """int8 dynamic quantisation (per-channel weights) of ``src`` into ``out``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = out.with_suffix(".tmp.onnx")
    quantize_dynamic(str(src), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
    tmp.replace(out)
    return out


class OnnxEncoder:
    """An ``Encoder`` (and token encoder) running the bundled model in ONNX Runtime."""

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        quantize: bool = False,
        batch_size: int = 8,
        threads: int | None = None,
    ) -> None:
        _offline()
        import onnxruntime as ort
        from transformers import AutoTokenizer

        self.path = Path(path) if path is not None else bundled_model_path()
        base = BUNDLED_MODEL_NAME if path is None else self.path.name
        self.quantize = quantize
        self.name = f"{base}-onnx-int8" if quantize else f"{base}-onnx"
        self.batch_size = batch_size
        self.max_length = _max_seq_length(self.path)
        self.tokenizer: Any = AutoTokenizer.from_pretrained(str(self.path))
        fp32 = state_path("models", f"{base}.{EXPORT_VERSION}.onnx")
        if not fp32.exists():
            export_onnx(self.path, fp32)
        file = fp32
        if quantize:
            file = state_path("models", f"{base}.{EXPORT_VERSION}.int8.onnx")
            if not file.exists():
                quantize_onnx(fp32, file)
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = threads or os.cpu_count() or 1
        self.session: Any = ort.InferenceSession(
            str(file), opts, providers=["CPUExecutionProvider"]
        )

    def _batches(self, texts: Sequence[str]) -> Any:
        """(indices, encoded batch) in order of token length, each padded to its longest."""
        lengths = [
            len(ids)
            for ids in self.tokenizer(
                list(texts), truncation=True, max_length=self.max_length, add_special_tokens=True
            )["input_ids"]
        ]
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            enc = self.tokenizer(
                [texts[i] for i in idx],
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="np",
                return_special_tokens_mask=True,
            )
            yield idx, enc

    def _hidden(self, enc: Any) -> np.ndarray:
        feed = {n: np.asarray(enc[n], dtype=np.int64) for n in INPUTS}
        return np.asarray(self.session.run(None, feed)[0], dtype=np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Mean-pooled, L2-normalised vectors, shape (len(texts), dim), in input order."""
        dim = 384
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for idx, enc in self._batches(texts):
            hidden = self._hidden(enc)
            mask = np.asarray(enc["attention_mask"], dtype=np.float32)[..., None]
            vec = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            out[idx] = vec / np.clip(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12, None)
        return out

    def encode_tokens(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Per-text (n_tokens, dim) L2-normalised token vectors; [CLS]/[SEP]/padding dropped."""
        out: list[np.ndarray] = [np.zeros((0, 384), dtype=np.float32)] * len(texts)
        for idx, enc in self._batches(texts):
            hidden = self._hidden(enc)
            keep = (np.asarray(enc["attention_mask"]) == 1) & (
                np.asarray(enc["special_tokens_mask"]) == 0
            )
            for row, i in enumerate(idx):
                tok = hidden[row][keep[row]]
                norms = np.clip(np.linalg.norm(tok, axis=1, keepdims=True), 1e-12, None)
                out[int(i)] = (tok / norms).astype(np.float32)
        return out


@lru_cache(maxsize=2)
def load_onnx_encoder(quantize: bool = False) -> OnnxEncoder:
    """The process-wide ONNX encoder of the bundled model."""
    return OnnxEncoder(quantize=quantize)
