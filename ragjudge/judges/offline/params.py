"""Fitted parameters of the offline judges: versioned JSON data shipped in the package.

A ``Params`` file holds one logistic model per decision the judges make:

- ``support``: does a text unit (a chunk, or an answer for completeness) support a claim
  (``features.SUPPORT_FEATURES``) -> faithfulness, context recall, completeness with a reference;
- ``relevancy``: does an answer address all of its question (``RELEVANCY_FEATURES``);
- ``short_relevancy`` (optional): the same for a fragment answer ("Rollo", "the 10th
  century"; ``segment.terse_answer``), on ``SHORT_RELEVANCY_FEATURES``; without it such an
  answer is read by ``relevancy``, which rates it low (it has no sentences to score);
- ``short_support`` (optional): does a chunk give a short answer ("Rollo", "1844";
  ``segment.short_answer``) as the answer to its question (``SHORT_SUPPORT_FEATURES``) ->
  faithfulness of such an answer; without it the answer is read as a claim with the question's
  words given, which a chunk naming it for anything supports;
- ``aspect``: does an answer cover one part of the question (``ASPECT_FEATURES``) ->
  completeness without a reference;
- ``chunk``: is a chunk relevant to the question / reference (``CHUNK_FEATURES``) -> context
  precision;
- ``xenc`` (optional): the calibration of the claim-support model (``supportmodel``): the same
  logistic form on the model's best-window logit and the claim's word overlap with the chunk's
  best window (``XENC_FEATURES``). When it is present, the support decisions use the model
  (``support.support_matrix``) and ``support`` is kept only for parameters without it.

p = sigmoid(intercept + sum_i coef_i * (x_i - mean_i) / scale_i); the decision is p >= threshold.
The judges' ``version`` includes the params' ``version`` and ``digest``, so refitted parameters
change cache keys and run manifests, even when saved under the same version name. Load order:
an explicit path, else ``$RAGJUDGE_OFFLINE_PARAMS``, else the bundled ``params/v2.json`` (the
feature models). ``params/v3.json`` (``MODEL_PARAMS``) is v2 plus ``xenc``: the judges read
claim support with the trained model; it is opt-in (``RAGJUDGE_OFFLINE_PARAMS``) until it
measures better than v2 on held-out sets (docs/benchmarks.md, "Offline claim-support model").
``params/v0-hand.json`` holds the hand-set starting values that ``bench/fit_offline_judges.py``
shrinks the v2 fit towards (the prior; not fitted on any labels).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ragjudge.errors import ConfigError, first_problem
from ragjudge.judges.offline.features import (
    ASPECT_FEATURES,
    CHUNK_FEATURES,
    RELEVANCY_FEATURES,
    SHORT_RELEVANCY_FEATURES,
    SHORT_SUPPORT_FEATURES,
    SUPPORT_FEATURES,
    XENC_FEATURES,
)
from ragjudge.userconfig import setting

PARAMS_DIR = Path(__file__).resolve().parent / "params"
DEFAULT_PARAMS = PARAMS_DIR / "v2.json"
MODEL_PARAMS = PARAMS_DIR / "v3.json"
PRIOR_PARAMS = PARAMS_DIR / "v0-hand.json"

ENV_VAR = "RAGJUDGE_OFFLINE_PARAMS"
SCHEMA_VERSION = 1

MODEL_FEATURES: dict[str, tuple[str, ...]] = {
    "support": SUPPORT_FEATURES,
    "relevancy": RELEVANCY_FEATURES,
    "aspect": ASPECT_FEATURES,
    "chunk": CHUNK_FEATURES,
}
OPTIONAL_FEATURES: dict[str, tuple[str, ...]] = {
    "xenc": XENC_FEATURES,
    "short_relevancy": SHORT_RELEVANCY_FEATURES,
    "short_support": SHORT_SUPPORT_FEATURES,
}
"""Models a ``Params`` may hold (see the module docstring)."""


class LogisticModel(BaseModel):
    """p = sigmoid(intercept + coef . standardised(x)); decision p >= threshold."""

    model_config = ConfigDict(extra="forbid")

    features: list[str]
    coef: list[float]
    intercept: float
    mean: list[float]
    scale: list[float]
    threshold: float = Field(default=0.5, gt=0.0, lt=1.0)
    fitted_on: str = ""
    cv: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _lengths(self) -> LogisticModel:
        n = len(self.features)
        if not (len(self.coef) == len(self.mean) == len(self.scale) == n):
            raise ValueError("features, coef, mean and scale must have the same length")
        if any(s <= 0 for s in self.scale):
            raise ValueError("every scale must be positive")
        return self

    def logit(self, x: np.ndarray) -> np.ndarray:
        """Logits of rows of ``x`` (columns in ``features`` order)."""
        z = (np.atleast_2d(x) - np.asarray(self.mean)) / np.asarray(self.scale)
        return z @ np.asarray(self.coef) + self.intercept

    def proba(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-np.clip(self.logit(x), -30, 30)))

    def proba_dict(self, values: dict[str, float]) -> float:
        return float(self.proba(np.array([[values[f] for f in self.features]]))[0])


class Params(BaseModel):
    """All offline models plus provenance. ``version`` names the fit (e.g. ``v2``)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    version: str
    description: str = ""
    models: dict[str, LogisticModel]
    support_card: str = "support.json"
    """The claim-support model ``xenc`` calibrates: its card in ``supportmodel.MODEL_DIR``
    (v3: ``support.json``; v4: ``support-v4.json``)."""
    provenance: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _complete(self) -> Params:
        if self.schema_version != SCHEMA_VERSION:
            raise ValueError(f"schema_version {self.schema_version} (this ragjudge reads 1)")
        for name in MODEL_FEATURES:
            if name not in self.models:
                raise ValueError(f"model {name!r} is missing")
        for name, model in self.models.items():
            need = MODEL_FEATURES.get(name) or OPTIONAL_FEATURES.get(name)
            if need is None:
                raise ValueError(f"unknown model {name!r}")
            if tuple(model.features) != need:
                raise ValueError(f"model {name!r} has features {model.features}, need {need}")
        return self

    @property
    def support_model(self) -> LogisticModel | None:
        """The claim-support model's calibration, when these parameters use the model."""
        return self.models.get("xenc")

    @property
    def digest(self) -> str:
        """First 8 hex digits of the SHA-256 of the models (canonical JSON): what the judges
        compute with, whatever the version is called."""
        blob = json.dumps(self.model_dump(mode="json")["models"], sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:8]

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.model_dump(), indent=2) + "\n", encoding="utf-8")


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> Params:
    del mtime  # part of the cache key: a rewritten file is read again
    try:
        return Params.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except ValidationError as exc:
        raise ConfigError(f"{path}: not offline judge parameters ({first_problem(exc)})") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read offline judge parameters {path}: {exc}") from None


def load_params(path: str | Path | None = None) -> Params:
    """The parameters at ``path``, else ``$RAGJUDGE_OFFLINE_PARAMS``, else the bundled v2."""
    chosen = Path(path or setting(ENV_VAR) or DEFAULT_PARAMS)
    if not chosen.is_file():
        raise ConfigError(f"offline judge parameters not found: {chosen}")
    return _load(str(chosen.resolve()), chosen.stat().st_mtime)
