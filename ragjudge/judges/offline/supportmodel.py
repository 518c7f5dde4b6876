"""The claim-support model: (claim, evidence passage) -> a logit that the passage supports it.

A cross-encoder fine-tuned from the bundled MiniLM (6 layers) on human claim-support labels
(bench/train_support_model.py; the data mix, seed and validation figures are in
``model/support.json``), shipped as ONNX (``model/support.onnx``) and run with onnxruntime.
Input: ``[CLS] claim [SEP] passage [SEP]`` word pieces of the bundled MiniLM tokenizer, at most
``max_len`` (the longer side truncated first); output: one logit. The logit (with the window's
word overlap) is turned into a probability by the ``xenc`` model of the offline parameters
(``params``: a logistic calibration fitted on validation labels, refitted by
``ragjudge fit-judges``), not here.

``chunk_scores(claims, chunks)``: the ``(claims, chunks)`` matrix of logits (and of word
overlaps, which the calibration also reads). Each chunk is cut into windows
(``windows.windows``); for each claim and chunk the chunk's ``top_windows`` windows with the
most claim words (``windows.ranked``) are scored, unless they hold less than ``min_overlap`` of
the claim's content words, and the best logit counts. A cell
depends on its claim and chunk only, so a prefix of the chunks gives a prefix of the columns
(the k-sweep's derivation at smaller k is exact). Pairs are scored in batches of similar length
(dynamic padding) and cached per process (LRU), so judges of the same item share them. The
session and tokenizer load once, on first use.

``digest``: the first 8 hex digits of the SHA-256 of the model file; the offline judges put it
in their version, so a new model never serves stale cached results.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragjudge.errors import ConfigError
from ragjudge.judges.offline.windows import scored, windows

MODEL_DIR = Path(__file__).resolve().parent / "model"
META_FILE = MODEL_DIR / "support.json"
BATCH = 32
NO_EVIDENCE = -6.0
"""The logit of a claim against a chunk with no window scored (no text, or too few of the
claim's words): below what the model gives a passage it reads as contradicting the claim."""


class ModelCard(BaseModel):
    """``model/support.json``: how the shipped claim-support model is run and how it was made."""

    model_config = ConfigDict(extra="forbid")

    model_file: str = "support.onnx"
    max_len: int = 128
    window_words: int = 64
    top_windows: int = 2
    min_overlap: float = 0.2
    """A window holding less than this share of the claim's content words is not scored (its
    logit is ``NO_EVIDENCE``): such a passage rarely supports the claim, and a scored pair costs
    tens of milliseconds of CPU (a cross-encoder reads claim and window together)."""
    training: dict[str, Any] = Field(default_factory=dict)
    figures: dict[str, Any] = Field(default_factory=dict)


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
        from ragjudge.embedding import file_digest

        return file_digest(self.model_path)

    def _load(self) -> None:
        from ragjudge.embedding import _offline, bundled_tokenizer, onnx_session

        _offline()
        self._tokenizer = bundled_tokenizer(self.card.max_len)
        self._session = onnx_session(self.model_path)

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

    def chunk_scores(
        self, claims: Sequence[str], chunks: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Two ``(claims, chunks)`` matrices: the best-window logits (module docstring; a chunk
        without text gets ``NO_EVIDENCE``) and the best window overlap (``windows.overlap``,
        the share of the claim's content words in the chunk's best window)."""
        per_chunk = [windows(c, self.card.window_words) for c in chunks]
        pairs: list[tuple[str, str]] = []
        cells: list[tuple[int, int]] = []
        shares = np.zeros((len(claims), len(chunks)))
        for i, claim in enumerate(claims):
            for j, ws in enumerate(per_chunk):
                order = scored(claim, ws)
                if order:
                    shares[i, j] = order[0][1]
                for k, share in order[: self.card.top_windows]:
                    if share >= self.card.min_overlap:
                        pairs.append((claim, ws[k]))
                        cells.append((i, j))
        logits = np.full((len(claims), len(chunks)), NO_EVIDENCE)
        for (i, j), logit in zip(cells, self.logits(pairs), strict=True):
            logits[i, j] = max(logits[i, j], float(logit))
        return logits, shares


_SHARED: dict[str, SupportModel] = {}
_SHARED_LOCK = threading.Lock()


def shared_model(card: str = META_FILE.name) -> SupportModel:
    """The process-wide model of the card ``card`` in ``model/`` (the default: v3's,
    ``support.json``; ``Params.support_card`` names the one a parameter set was calibrated
    for); the network is read on first scoring."""
    with _SHARED_LOCK:
        if card not in _SHARED:
            _SHARED[card] = SupportModel(MODEL_DIR / card)
        return _SHARED[card]
