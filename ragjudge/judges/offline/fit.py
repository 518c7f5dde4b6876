"""Fitting the offline judges' parameters on human labels (``ragjudge fit-judges``).

Labels file (JSONL, or CSV with a header), one labelled item per row:

    dimension   faithfulness | answer_relevancy | completeness | context_recall | context_precision
    question    the question (required)
    answer      the answer (faithfulness, answer_relevancy, completeness)
    contexts    list of strings (JSONL), or in CSV a JSON list or one plain string
    reference   optional reference answer (context_recall needs it)
    claim       optional: for faithfulness, the ONE claim of the answer that the label is about
    label       1/0, yes/no, true/false, a number in [0, 1] (>= 0.5 is yes), or 1..5 (>= 4 is yes)
    group       optional: rows with the same group stay in the same cross-validation fold
                (e.g. the question id)

Which model each dimension fits (see ``params``): faithfulness and context_recall -> ``support``
(a row with ``claim``: that claim against its best chunk; without: the mean of the claims'
best-chunk features, against the answer-level label); completeness -> ``support`` with the
answer as the chunk when there is a reference, else ``aspect`` (mean over the question's
aspects); answer_relevancy -> ``relevancy``; context_precision -> ``chunk`` (the label is about
``contexts[0]``, the chunk judged). A model with no labels (or labels of one class only) keeps
its base parameters.

Fitting: scikit-learn logistic regression on standardised features, the L2 strength C chosen from
``C_GRID`` by grouped k-fold cross-validated log loss; the reported CV figures (AUROC, accuracy
at the chosen threshold) are out-of-fold. For the decision models (support, aspect, chunk) the
threshold maximising out-of-fold accuracy is folded into the intercept, so p >= 0.5 is the
decision everywhere (the contract of ``ragjudge.judges.prefix``).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ragjudge.errors import DataError
from ragjudge.judges.offline.embed import EmbeddingCache, shared_cache
from ragjudge.judges.offline.features import (
    CHUNK_FEATURES,
    RELEVANCY_FEATURES,
    SUPPORT_FEATURES,
    aspect_features,
    chunk_features,
    profile,
    relevancy_features,
    stems,
    support_features,
)
from ragjudge.judges.offline.params import LogisticModel, Params, load_params
from ragjudge.judges.offline.segment import claims, question_aspects, reference_points
from ragjudge.judges.offline.support import support_matrix

DIMENSIONS = (
    "faithfulness",
    "answer_relevancy",
    "completeness",
    "context_recall",
    "context_precision",
)
C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
DECISION_MODELS = frozenset({"support", "aspect", "chunk"})
_YES = {"1": 1, "yes": 1, "true": 1, "y": 1, "0": 0, "no": 0, "false": 0, "n": 0}


@dataclass
class LabelRow:
    """One labelled item (see the module docstring for the fields)."""

    dimension: str
    question: str
    label: int
    answer: str = ""
    contexts: list[str] = field(default_factory=list)
    reference: str | None = None
    claim: str | None = None
    group: str | None = None


def parse_label(raw: Any) -> int:
    """1/0 from the label forms of the module docstring; ValueError otherwise."""
    if isinstance(raw, bool):
        return int(raw)
    text = str(raw).strip().lower()
    if text in _YES:
        return _YES[text]
    value = float(text)
    if math.isnan(value):
        raise ValueError("label is NaN")
    if 0.0 <= value <= 1.0:
        return int(value >= 0.5)
    if value == int(value) and 1 <= value <= 5:
        return int(value >= 4)
    raise ValueError(f"label {raw!r} is not 0/1, yes/no, [0, 1] or 1..5")


def _row(obj: dict[str, Any], path: Path, line: int) -> LabelRow:
    def need(key: str) -> str:
        value = obj.get(key)
        if value is None or not str(value).strip():
            raise DataError(f"missing {key!r}", path=path, line=line)
        return str(value)

    dimension = need("dimension")
    if dimension not in DIMENSIONS:
        raise DataError(
            f"unknown dimension {dimension!r}; known: {', '.join(DIMENSIONS)}", path=path, line=line
        )
    contexts: Any = obj.get("contexts") or []
    if isinstance(contexts, str):
        text = contexts.strip()
        if text.startswith("["):
            try:
                contexts = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataError(
                    f"contexts is not a JSON list: {exc}", path=path, line=line
                ) from None
        else:
            contexts = [text] if text else []
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise DataError("contexts must be a list of strings", path=path, line=line)
    try:
        label = parse_label(obj.get("label"))
    except ValueError as exc:
        raise DataError(f"bad label: {exc}", path=path, line=line) from None
    row = LabelRow(
        dimension=dimension,
        question=need("question"),
        label=label,
        answer=str(obj.get("answer") or ""),
        contexts=contexts,
        reference=(str(obj["reference"]) if obj.get("reference") else None),
        claim=(str(obj["claim"]) if obj.get("claim") else None),
        group=(str(obj["group"]) if obj.get("group") not in (None, "") else None),
    )
    if dimension in ("faithfulness", "answer_relevancy", "completeness") and not (
        row.answer.strip() or row.claim
    ):
        raise DataError(f"{dimension} needs an answer", path=path, line=line)
    if dimension in ("faithfulness", "context_recall", "context_precision") and not contexts:
        raise DataError(f"{dimension} needs contexts", path=path, line=line)
    if dimension == "context_recall" and not row.reference:
        raise DataError("context_recall needs a reference", path=path, line=line)
    return row


def read_labels(path: Path) -> list[LabelRow]:
    """Rows of a JSONL or CSV labels file; a bad row raises ``DataError`` with its line."""
    if not path.is_file():
        raise DataError("labels file not found", path=path)
    rows: list[LabelRow] = []
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            for line, obj in enumerate(reader, start=2):
                rows.append(_row(dict(obj), path, line))
    else:
        with path.open(encoding="utf-8") as fh:
            for line, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                try:
                    obj = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise DataError(f"not JSON: {exc}", path=path, line=line) from None
                if not isinstance(obj, dict):
                    raise DataError("a row must be a JSON object", path=path, line=line)
                rows.append(_row(obj, path, line))
    if not rows:
        raise DataError("no labelled rows", path=path)
    return rows


# ----------------------------------------------------------------------------- features


def _best_chunk_features(
    claim_list: list[str],
    contexts: Sequence[str],
    cache: EmbeddingCache,
) -> np.ndarray:
    """Per claim, the support features at its best chunk (by cos_max + lex_max)."""
    profiles = [profile(c) for c in contexts]
    feats = np.stack([support_features(claim_list, p, cache) for p in profiles], axis=1)
    i_cos, i_lex = SUPPORT_FEATURES.index("cos_max"), SUPPORT_FEATURES.index("lex_max")
    best = (feats[:, :, i_cos] + feats[:, :, i_lex]).argmax(axis=1)
    out: np.ndarray = feats[np.arange(len(claim_list)), best]
    return out


def row_features(row: LabelRow, base: Params, cache: EmbeddingCache) -> tuple[str, np.ndarray]:
    """(model name, feature vector) of one labelled row; ValueError when it has none."""
    if row.dimension == "answer_relevancy":
        f = relevancy_features(row.question, row.answer, cache)
        return "relevancy", np.array([f[k] for k in RELEVANCY_FEATURES])
    if row.dimension == "context_precision":
        ref_support = None
        points = reference_points(row.reference or "")
        if points:
            m, _ = support_matrix(points, [profile(row.contexts[0])], base.models["support"], cache)
            ref_support = float(m.max())
        f = chunk_features(
            row.question, profile(row.contexts[0]), cache, reference_support=ref_support
        )
        return "chunk", np.array([f[k] for k in CHUNK_FEATURES])
    if row.dimension == "completeness" and not row.reference:
        aspects = question_aspects(row.question)
        if not aspects:
            raise ValueError("the question has no aspects")
        return "aspect", aspect_features(aspects, row.answer, row.question, cache).mean(axis=0)
    if row.dimension == "completeness":
        points = reference_points(row.reference or "")
        chunks = [row.answer]
        profiles_as_units = True
    elif row.dimension == "context_recall":
        points = reference_points(row.reference or "")
        chunks = row.contexts
        profiles_as_units = False
    else:
        points = [row.claim] if row.claim else claims(row.answer)
        chunks = row.contexts
        profiles_as_units = False
    if not points:
        raise ValueError("no claims to judge")
    if profiles_as_units:
        feats = support_features(
            points,
            profile(chunks[0], as_units=True),
            cache,
            given=frozenset(stems(row.question)),
        )
    else:
        feats = _best_chunk_features(points, chunks, cache)
    return "support", feats.mean(axis=0)


# ----------------------------------------------------------------------------- fitting


def _auroc(y: np.ndarray, s: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s)) if len(set(y.tolist())) == 2 else float("nan")


def _folds(y: np.ndarray, groups: Sequence[str] | None, k: int, seed: int) -> list[np.ndarray]:
    """Fold index per row: grouped when groups are given, stratified otherwise."""
    from sklearn.model_selection import GroupKFold, StratifiedKFold

    n_splits = max(2, min(k, int(np.bincount(y).min())))
    idx = np.arange(len(y))
    if groups is not None and len(set(groups)) >= n_splits:
        splitter = GroupKFold(n_splits=n_splits)
        return [test for _, test in splitter.split(idx, y, groups=list(groups))]
    strat = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    return [test for _, test in strat.split(idx, y)]


def fit_logistic(
    x: np.ndarray,
    y: np.ndarray,
    features: Sequence[str],
    *,
    groups: Sequence[str] | None = None,
    decision: bool = True,
    k: int = 5,
    seed: int = 0,
    fitted_on: str = "",
) -> LogisticModel:
    """A ``LogisticModel`` fitted with cross-validated C (see the module docstring)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    folds = _folds(y, groups, k, seed)

    def oof(c: float) -> np.ndarray:
        pred = np.zeros(len(y))
        for test in folds:
            train = np.setdiff1d(np.arange(len(y)), test)
            clf = LogisticRegression(C=c, max_iter=2000).fit(z[train], y[train])
            pred[test] = clf.predict_proba(z[test])[:, 1]
        return pred

    scored = [(log_loss(y, np.clip(oof(c), 1e-6, 1 - 1e-6)), c) for c in C_GRID]
    best_loss, best_c = min(scored)
    pred = oof(best_c)
    clf = LogisticRegression(C=best_c, max_iter=2000).fit(z, y)
    intercept = float(clf.intercept_[0])
    threshold = 0.5
    if decision:
        grid = np.unique(np.round(pred, 3))
        accs = [((pred >= t) == y).mean() for t in grid]
        threshold = float(min(max(grid[int(np.argmax(accs))], 0.02), 0.98))
        intercept -= math.log(threshold / (1 - threshold))
    cv = {
        "C": best_c,
        "log_loss": round(float(best_loss), 4),
        "auroc": round(_auroc(y, pred), 4),
        "accuracy": round(float(((pred >= threshold) == y).mean()), 4),
        "threshold": round(threshold, 4),
        "n": float(len(y)),
        "positives": float(y.sum()),
        "folds": float(len(folds)),
    }
    return LogisticModel(
        features=list(features),
        coef=[round(float(c), 6) for c in clf.coef_[0]],
        intercept=round(intercept, 6),
        mean=[round(float(m), 6) for m in mean],
        scale=[round(float(s), 6) for s in scale],
        fitted_on=fitted_on,
        cv=cv,
    )


def featurise(
    rows: Iterable[LabelRow], base: Params, cache: EmbeddingCache | None = None
) -> dict[str, tuple[np.ndarray, np.ndarray, list[str]]]:
    """model name -> (X, y, groups) over the rows (rows without features are skipped)."""
    cache = cache or shared_cache()
    acc: dict[str, tuple[list[np.ndarray], list[int], list[str]]] = {}
    for n, row in enumerate(rows):
        try:
            model, vec = row_features(row, base, cache)
        except ValueError:
            continue
        xs, ys, gs = acc.setdefault(model, ([], [], []))
        xs.append(vec)
        ys.append(row.label)
        gs.append(row.group or f"row{n}")
    return {m: (np.stack(xs), np.array(ys), gs) for m, (xs, ys, gs) in acc.items()}


def fit_params(
    rows: Sequence[LabelRow],
    *,
    version: str,
    base: Params | None = None,
    description: str = "",
    provenance: dict[str, Any] | None = None,
    cache: EmbeddingCache | None = None,
) -> Params:
    """New parameters: every model with labels of both classes refitted, the rest from ``base``.

    The ``chunk`` model's ``ref_support`` feature uses ``base``'s support model, so refit the
    support model first (``fit-judges`` does it in two passes when both are labelled).
    """
    base = base or load_params()
    data = featurise(rows, base, cache)
    models = dict(base.models)
    fitted: list[str] = []
    for name, (x, y, groups) in data.items():
        if len(set(y.tolist())) < 2:
            continue
        models[name] = fit_logistic(
            x,
            y,
            base.models[name].features,
            groups=groups,
            decision=name in DECISION_MODELS,
            fitted_on=f"{len(y)} labelled rows",
        )
        fitted.append(name)
    info = {
        "fitted_models": sorted(fitted),
        "kept_from_base": sorted(set(models) - set(fitted)),
        "base_version": base.version,
        "fitted_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **(provenance or {}),
    }
    return Params(version=version, description=description, models=models, provenance=info)


def refit(
    rows: Sequence[LabelRow], *, version: str, base: Params | None = None, **kw: Any
) -> Params:
    """``fit_params`` in two passes when chunk labels exist (support first, then chunk)."""
    first = fit_params(rows, version=version, base=base, **kw)
    if any(r.dimension == "context_precision" for r in rows) and "support" in first.provenance.get(
        "fitted_models", []
    ):
        second = fit_params(
            [r for r in rows if r.dimension == "context_precision"],
            version=version,
            base=first,
            **kw,
        )
        second.provenance.update(
            fitted_models=sorted(set(first.provenance["fitted_models"]) | {"chunk"}),
            base_version=first.provenance["base_version"],
        )
        second.provenance["kept_from_base"] = sorted(
            set(second.models) - set(second.provenance["fitted_models"])
        )
        return second
    return first
