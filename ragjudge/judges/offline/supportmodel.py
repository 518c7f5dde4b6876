"""The claim-support model: (claim, evidence passage) -> P(the passage supports the claim).

A cross-encoder fine-tuned from the bundled MiniLM (6 layers) on human claim-support labels
(bench/train_support_model.py; the data mix, seed and figures are in ``model/support.json``),
shipped as int8 ONNX (``model/support.onnx``) and run with onnxruntime. Input:
``[CLS] claim [SEP] passage [SEP]`` word pieces of the bundled MiniLM tokenizer, at most
``max_len`` (the longer side truncated first); output: one logit.

``P = sigmoid(a * logit + b)``, ``a`` and ``b`` fitted (Platt) on the validation split of the
training sets with every set and class weighing the same (bench/fit_support_model.py), so P is
calibrated for a 50/50 prior. A claim's verdict: ``supported`` if its P >= ``thresholds.supported``,
``partial`` if P >= ``thresholds.partial``, else ``unsupported`` (both fitted on the same
validation data).

``support(claims, chunks)``: the ``(claims, chunks)`` matrix of P. Each chunk is cut into
``windows`` (``windows.windows``); for each claim only the ``top_windows`` windows with the most
claim words (over all chunks, ``windows.ranked``) are scored, and a chunk's cell is the best P of
its scored windows; a chunk none of whose windows was scored gets P = 0. Pairs are scored in
batches of similar length (dynamic padding) and cached per process (LRU), so judges of the same
item share them. The session and tokenizer load once, on first use.

``digest``: the first 8 hex digits of the SHA-256 of the model file and the calibration; the
offline judges put it in their version, so a new model never serves stale cached results.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragjudge.errors import ConfigError
from ragjudge.judges.offline.windows import ranked, windows
from ragjudge.schema import ClaimVerdict, Verdict

MODEL_DIR = Path(__file__).resolve().parent / "model"
META_FILE = MODEL_DIR / "support.json"
BATCH = 32


class Calibration(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: float = 1.0
    b: float = 0.0


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid")
    supported: float = Field(default=0.5, gt=0.0, lt=1.0)
    partial: float = Field(default=0.35, gt=0.0, lt=1.0)


class ModelCard(BaseModel):
    """``model/support.json``: how the shipped model is run, calibrated and was made."""

    model_config = ConfigDict(extra="forbid")

    model_file: str = "support.onnx"
    max_len: int = 128
    window_words: int = 64
    top_windows: int = 4
    calibration: Calibration = Field(default_factory=Calibration)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    training: dict[str, Any] = Field(default_factory=dict)
    figures: dict[str, Any] = Field(default_factory=dict)


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class SupportModel:
    """The shipped claim-support model (module docstring). Thread-safe; loads lazily."""

    def __init__(self, meta: Path | str | None = None, *, max_cached: int = 50_000) -> None:
        self.meta_path = Path(meta) if meta is not None else META_FILE
        try:
            self.card = ModelCard.model_validate_json(self.meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot read the support model card {self.meta_path}: {exc}"
            ) from exc
        self.model_path = self.meta_path.parent / self.card.model_file
        if not self.model_path.is_file():
            raise ConfigError(f"the support model is missing: {self.model_path}")
        self.max_cached = max_cached
        self._session: Any = None
        self._tokenizer: Any = None
        self._cache: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._lock = threading.Lock()
        self.scored = 0
        """How many pairs went through the network (cache misses), for benchmarks and tests."""

    @property
    def digest(self) -> str:
        return _digest(str(self.model_path), self.card.calibration.model_dump_json())

    def _load(self) -> None:
        _offline()
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from ragjudge.embedding import bundled_model_path

        tok = Tokenizer.from_file(str(bundled_model_path() / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(self.card.max_len, strategy="longest_first")
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = min(2, os.cpu_count() or 1)
        self._session = ort.InferenceSession(
            str(self.model_path), opts, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tok

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Raw logits of ``(claim, passage)`` pairs, batched by length, cached."""
        with self._lock:
            if self._session is None:
                self._load()
            todo = list(dict.fromkeys(p for p in pairs if p not in self._cache))
            if todo:
                encs = self._tokenizer.encode_batch(todo)
                order = np.argsort([len(e.ids) for e in encs], kind="stable")
                for start in range(0, len(order), BATCH):
                    idx = order[start : start + BATCH]
                    width = max(len(encs[i].ids) for i in idx)
                    ids = np.zeros((len(idx), width), dtype=np.int64)
                    types = np.zeros_like(ids)
                    mask = np.zeros_like(ids)
                    for r, i in enumerate(idx):
                        n = len(encs[i].ids)
                        ids[r, :n] = encs[i].ids
                        types[r, :n] = encs[i].type_ids
                        mask[r, :n] = 1
                    out = self._session.run(
                        None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
                    )[0]
                    for r, i in enumerate(idx):
                        self._cache[todo[i]] = float(out[r])
                self.scored += len(todo)
            result = np.array([self._cache[p] for p in pairs], dtype=np.float64)
            for p in pairs:
                self._cache.move_to_end(p)
            while len(self._cache) > self.max_cached:
                self._cache.popitem(last=False)
        return result

    def calibrate(self, logits: np.ndarray) -> np.ndarray:
        """P = sigmoid(a * logit + b)."""
        c = self.card.calibration
        return 1.0 / (1.0 + np.exp(-np.clip(c.a * logits + c.b, -30, 30)))

    def proba(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return self.calibrate(self.logits(pairs)) if pairs else np.zeros(0)

    def support(self, claims: Sequence[str], chunks: Sequence[str]) -> np.ndarray:
        """The ``(claims, chunks)`` matrix of P (module docstring: best scored window)."""
        per_chunk = [windows(c, self.card.window_words) or [c.strip()] for c in chunks]
        flat = [(j, w) for j, ws in enumerate(per_chunk) for w in ws if w]
        passages = [w for _, w in flat]
        pairs: list[tuple[str, str]] = []
        cells: list[tuple[int, int]] = []
        for i, claim in enumerate(claims):
            for k in ranked(claim, passages)[: self.card.top_windows]:
                pairs.append((claim, passages[k]))
                cells.append((i, flat[k][0]))
        matrix = np.zeros((len(claims), len(chunks)))
        for (i, j), p in zip(cells, self.proba(pairs), strict=True):
            matrix[i, j] = max(matrix[i, j], float(p))
        return matrix

    def verdict(self, p: float) -> Verdict:
        t = self.card.thresholds
        return "supported" if p >= t.supported else "partial" if p >= t.partial else "unsupported"

    def verdicts(self, claims: Sequence[str], matrix: np.ndarray) -> list[ClaimVerdict]:
        """One verdict per claim from its best chunk; ``supporting_chunks``: the chunks with
        P >= the supported threshold (the best one for partial); ``confidence``: P (1 - P for
        unsupported)."""
        out: list[ClaimVerdict] = []
        for i, claim in enumerate(claims):
            row = matrix[i] if matrix.shape[1] else np.zeros(1)
            best = float(row.max())
            v = self.verdict(best)
            chunks = [int(j) for j in np.flatnonzero(row >= self.card.thresholds.supported)]
            if v == "partial":
                chunks = [int(np.argmax(row))]
            out.append(
                ClaimVerdict(
                    claim=claim,
                    verdict=v,
                    supporting_chunks=chunks if matrix.shape[1] else [],
                    confidence=round(best if v != "unsupported" else 1.0 - best, 4),
                    rationale=f"best chunk {int(np.argmax(row))} at P={best:.2f}",
                )
            )
        return out


@lru_cache(maxsize=4)
def _digest(path: str, calibration: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    h.update(calibration.encode("utf-8"))
    return h.hexdigest()[:8]


_SHARED: SupportModel | None = None
_SHARED_LOCK = threading.Lock()


def shared_model() -> SupportModel:
    """The process-wide shipped model (the file is read on first scoring)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = SupportModel()
        return _SHARED
