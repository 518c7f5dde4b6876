"""Fitting the offline judges' parameters on human labels (``ragjudge fit-judges``).

Labels file (JSONL, or CSV with a header), one labelled item per row:

    dimension   faithfulness | answer_relevancy | completeness | context_recall | context_precision
    question    the question (required)
    answer      the answer (faithfulness, answer_relevancy, completeness)
    contexts    list of strings (JSONL), or in CSV a JSON list, a spot-check sheet's numbered
                contexts (``[1] ...`` blocks separated by a blank line) or one plain string
    reference   optional reference answer (context_recall needs it)
    claim       optional: for faithfulness, the ONE claim of the answer that the label is about
                (``[3]``-style citation markers are removed, as the judges remove them)
    label       1/0, yes/no, true/false, a number in [0, 1] (>= 0.5 is yes), or 1..5 (>= 4 is yes)
    group       optional: rows with the same group stay in the same cross-validation fold
                (e.g. the question id); default: the case of ``item_id`` (``q07@k3`` -> ``q07``)
    weight      optional: a positive number, the row's weight in the fit (default 1); give
                each source of labels the same total weight when one set is much larger

A filled ``ragjudge spot-check`` sheet (and the demo's ``labels.csv``) is such a file; rows whose
label is still blank are skipped and counted. Other columns are ignored.

Which model each dimension fits (see ``params``): faithfulness and context_recall -> the
support decision (a row with ``claim``: that claim against its best chunk; without: the mean
over the claims of their best-chunk evidence, against the answer-level label): ``xenc``, the
calibration of the claim-support model's logit, when the base parameters have it, else the
feature model ``support``; completeness -> the same with the answer as the chunk when there is
a reference, else ``aspect`` (mean over the question's aspects); answer_relevancy ->
``relevancy``, or ``short_relevancy`` for a fragment answer when the base parameters have it
(``relevancy.relevancy_model``); a faithfulness row whose answer, or a context_recall row whose
reference, is short (``segment.short_answer``) -> ``short_support`` at the chunk the base model
rates best (such a row is skipped when ``support.short_support_model`` gives none: no such
model in the base parameters, or no content word in the question); context_precision ->
``chunk`` (the label is about ``contexts[0]``, the chunk judged). A model with no labels (or
labels of one class only) keeps its base parameters.

Fitting: a weighted logistic regression on standardised features z, shrunk towards the base
parameters (the prior) rather than towards zero, with each coefficient kept on the side of zero
that ``features.FEATURE_SIGNS`` gives (so a fitted judge stays monotone in its evidence), and
the coefficients of ``features.RULE_FEATURES`` held at 0 (they act as rules instead):

    minimise  sum_i w_i [log(1 + e^eta_i) - y_i eta_i] / sum_i w_i + lambda/2 ||beta - beta_0||^2
    eta_i = b + z_i . beta,   beta_0 = the base model's coefficients in the same standardisation

solved by L-BFGS-B with those bounds. lambda is chosen from ``LAMBDA_GRID`` by grouped k-fold
cross-validated (weighted) log loss with the one-standard-error rule (the largest lambda within
one standard error of the best): labels that carry little signal keep the prior, labels that
carry much move it. The reported CV figures (log loss beside the prior's,
AUROC, accuracy at the chosen threshold) are out-of-fold. For the decision models (support,
aspect, chunk) the threshold maximising out-of-fold accuracy is folded into the intercept, so
p >= 0.5 is the decision everywhere (the contract of ``ragjudge.judges.prefix``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ragjudge.errors import DataError
from ragjudge.io.rows import label_rows, split_contexts
from ragjudge.judges.offline.embed import EmbeddingCache, shared_cache
from ragjudge.judges.offline.features import (
    CHUNK_FEATURES,
    FEATURE_SIGNS,
    RULE_FEATURES,
    SUPPORT_FEATURES,
    XENC_FEATURES,
    aspect_features,
    chunk_features,
    profile,
    relevancy_features,
    short_support_features,
    stems,
    support_features,
)
from ragjudge.judges.offline.params import LogisticModel, Params, load_params
from ragjudge.judges.offline.relevancy import relevancy_model
from ragjudge.judges.offline.segment import (
    claims,
    question_aspects,
    reference_points,
    short_answer,
    strip_citations,
)
from ragjudge.judges.offline.support import (
    reference_support,
    short_support_model,
    support_matrix,
)
from ragjudge.judges.registry import JUDGE_NAMES, create_judge
from ragjudge.protocols import Judge

LAMBDA_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0)
DECISION_MODELS = frozenset({"support", "xenc", "short_support", "aspect", "chunk"})
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
    weight: float = 1.0


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


def _contexts_cell(text: str, path: Path, line: int) -> list[str]:
    """A CSV ``contexts`` cell: a JSON list, a spot-check sheet's numbered contexts
    (``"[1] a\\n\\n[2] b"``), or one plain context."""
    if text.startswith("[1] "):
        return split_contexts(text)
    if text.startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"contexts is neither a JSON list nor numbered '[1] ...' contexts: {exc}",
                path=path,
                line=line,
            ) from None
        return value if isinstance(value, list) else [text]
    return [text] if text else []


def _case_of(obj: dict[str, Any]) -> str | None:
    """The case of a spot-check sheet row (``item_id`` ``q07@k3`` -> ``q07``): the items of one
    case stay in one cross-validation fold."""
    item = str(obj.get("item_id") or "").strip()
    return item.rpartition("@k")[0] or item or None


def _row(obj: dict[str, Any], path: Path, line: int) -> LabelRow:
    def need(key: str) -> str:
        value = obj.get(key)
        if value is None or not str(value).strip():
            raise DataError(f"missing {key!r}", path=path, line=line)
        return str(value)

    dimension = need("dimension")
    if dimension not in JUDGE_NAMES:
        raise DataError(
            f"unknown dimension {dimension!r}; known: {', '.join(JUDGE_NAMES)}",
            path=path,
            line=line,
        )
    contexts: Any = obj.get("contexts") or []
    if isinstance(contexts, str):
        contexts = _contexts_cell(contexts.strip(), path, line)
    if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
        raise DataError("contexts must be a list of strings", path=path, line=line)
    try:
        label = parse_label(obj.get("label"))
    except ValueError as exc:
        raise DataError(f"bad label: {exc}", path=path, line=line) from None
    raw_weight = obj.get("weight")
    try:
        weight = 1.0 if raw_weight in (None, "") else float(raw_weight)
    except (TypeError, ValueError):
        weight = float("nan")
    if not (weight > 0 and math.isfinite(weight)):
        raise DataError(f"bad weight {raw_weight!r}: need a positive number", path=path, line=line)
    row = LabelRow(
        dimension=dimension,
        question=need("question"),
        label=label,
        answer=str(obj.get("answer") or ""),
        contexts=contexts,
        reference=(str(obj["reference"]) if obj.get("reference") else None),
        claim=(str(obj["claim"]) if obj.get("claim") else None),
        group=(str(obj["group"]) if obj.get("group") not in (None, "") else _case_of(obj)),
        weight=weight,
    )
    judge = _offline_judge(dimension)
    if judge.needs_answer and not (row.answer.strip() or row.claim):
        raise DataError(f"{dimension} needs an answer", path=path, line=line)
    if judge.needs_contexts and not contexts:
        raise DataError(f"{dimension} needs contexts", path=path, line=line)
    if judge.requires_reference and not row.reference:
        raise DataError(f"{dimension} needs a reference", path=path, line=line)
    return row


@lru_cache(maxsize=len(JUDGE_NAMES))
def _offline_judge(dimension: str) -> Judge:
    """The offline judge a label row of ``dimension`` fits: what it reads (answer, contexts,
    reference) is its own declaration."""
    return create_judge(dimension, "offline")


def read_labels(path: Path, *, blank: list[int] | None = None) -> list[LabelRow]:
    """Rows of a JSONL or CSV labels file; a bad row raises ``DataError`` with its line.

    A row whose label is blank (a spot-check sheet not filled in yet) is skipped; its line is
    appended to ``blank`` when given."""
    rows: list[LabelRow] = []
    skipped: list[int] = []
    for line, obj in label_rows(path):
        if _blank(obj):
            skipped.append(line)
            continue
        rows.append(_row(obj, path, line))
    if blank is not None:
        blank.extend(skipped)
    if not rows:
        more = f" ({len(skipped)} rows have a blank label)" if skipped else ""
        raise DataError(f"no labelled rows{more}", path=path)
    return rows


def _blank(obj: dict[str, Any]) -> bool:
    return obj.get("label") is None or str(obj["label"]).strip() == ""


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


def _short_row(
    text: str, row: LabelRow, base: Params, cache: EmbeddingCache
) -> tuple[str, np.ndarray]:
    """A short answer or reference (``segment.short_answer``) against the row's contexts:
    ``short_support`` features at the chunk the base model rates best."""
    short = short_answer(text)
    model = short_support_model(short, row.question, base)
    if short is None or model is None:
        raise ValueError("a short answer is fitted only by a short_support model")
    feats = short_support_features(row.question, short, [profile(c) for c in row.contexts], cache)
    return "short_support", feats[int(np.argmax(model.proba(feats)))]


def row_features(row: LabelRow, base: Params, cache: EmbeddingCache) -> tuple[str, np.ndarray]:
    """(model name, feature vector) of one labelled row; ValueError when it has none."""
    if row.dimension == "answer_relevancy":
        model = relevancy_model(row.answer, base)
        f = relevancy_features(row.question, row.answer, cache)
        return model, np.array([f[k] for k in base.models[model].features])
    if row.dimension == "context_precision":
        ref_support = None
        chunk = [profile(row.contexts[0])]
        points, sup = reference_support(row.reference or "", row.question, chunk, base, cache)
        if points:
            ref_support = float(sup.matrix.max())
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
        if short_answer(row.reference or "") is not None:
            return _short_row(row.reference or "", row, base, cache)
        points = reference_points(row.reference or "")
        chunks = row.contexts
        profiles_as_units = False
    else:
        if not row.claim and short_answer(row.answer) is not None:
            return _short_row(row.answer, row, base, cache)
        points = [strip_citations(row.claim)] if row.claim else claims(row.answer)
        chunks = row.contexts
        profiles_as_units = False
    if not points:
        raise ValueError("no claims to judge")
    if base.support_model is not None:
        sup = support_matrix(
            points,
            [profile(c, as_units=profiles_as_units) for c in chunks],
            base,
            cache,
            question=row.question if profiles_as_units else "",
        )
        best = sup.matrix.argmax(axis=1)
        cells = sup.features[np.arange(len(points)), best][:, : len(XENC_FEATURES)]
        return "xenc", cells.mean(axis=0)
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


def _auroc(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> float:
    """Weighted AUROC; 0.5 (no information) when ``y`` has one class only."""
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s, sample_weight=w)) if len(set(y.tolist())) == 2 else 0.5


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


def _prior_in(
    prior: LogisticModel, mean: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, float]:
    """(beta_0, b_0): the prior's logit written on features standardised by ``mean``/``scale``."""
    w_raw = np.asarray(prior.coef) / np.asarray(prior.scale)
    b_raw = prior.intercept - float(w_raw @ np.asarray(prior.mean))
    return w_raw * scale, b_raw + float(w_raw @ mean)


def _solve(
    z: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    lam: float,
    beta0: np.ndarray,
    b0: float,
    bounds: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, float]:
    """(beta, b) minimising the objective of the module docstring (``w`` sums to 1), each
    coefficient within ``bounds`` = (lower, upper); the intercept is free."""
    from scipy.optimize import Bounds, minimize
    from scipy.special import expit

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        beta, b = theta[:-1], theta[-1]
        eta = z @ beta + b
        loss = float(w @ (np.logaddexp(0.0, eta) - y * eta))
        diff = beta - beta0
        r = w * (expit(eta) - y)
        grad = np.append(z.T @ r + lam * diff, r.sum())
        return loss + 0.5 * lam * float(diff @ diff), grad

    lo, hi = bounds
    start = np.append(np.clip(beta0, lo, hi), b0)
    box = Bounds(np.append(lo, -np.inf), np.append(hi, np.inf))
    res = minimize(objective, start, jac=True, method="L-BFGS-B", bounds=box)
    return res.x[:-1], float(res.x[-1])


def _coef_bounds(
    features: Sequence[str], signs: dict[str, int], fixed: frozenset[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) per coefficient: [0, inf) for sign +1, (-inf, 0] for -1, free for 0 or
    absent, [0, 0] for a fixed feature."""
    sign = np.array([signs.get(f, 0) for f in features])
    lo = np.where(sign > 0, 0.0, -np.inf)
    hi = np.where(sign < 0, 0.0, np.inf)
    held = np.array([f in fixed for f in features], dtype=bool)
    return np.where(held, 0.0, lo), np.where(held, 0.0, hi)


def _weighted_log_loss(y: np.ndarray, p: np.ndarray, w: np.ndarray) -> float:
    from sklearn.metrics import log_loss

    return float(log_loss(y, np.clip(p, 1e-6, 1 - 1e-6), sample_weight=w, labels=[0, 1]))


def _one_se_choice(
    y: np.ndarray, preds: dict[float, np.ndarray], w: np.ndarray, folds: list[np.ndarray]
) -> tuple[float, float]:
    """(lambda, its CV log loss): the largest lambda whose out-of-fold log loss is within one
    standard error (over folds) of the smallest: the "one-standard-error rule", which keeps
    more of the prior when the labels cannot tell the candidates apart."""
    table = []
    for lam, pred in preds.items():
        per_fold = [_weighted_log_loss(y[t], pred[t], w[t]) for t in folds]
        table.append((lam, _weighted_log_loss(y, pred, w), float(np.std(per_fold))))
    _, loss_min, sd_min = min(table, key=lambda r: r[1])
    limit = loss_min + sd_min / math.sqrt(len(folds))
    return max((lam, loss) for lam, loss, _ in table if loss <= limit)


def fit_logistic(
    x: np.ndarray,
    y: np.ndarray,
    features: Sequence[str],
    *,
    groups: Sequence[str] | None = None,
    weights: np.ndarray | None = None,
    prior: LogisticModel | None = None,
    signs: dict[str, int] | None = None,
    fixed: frozenset[str] = frozenset(),
    decision: bool = True,
    k: int = 5,
    seed: int = 0,
    fitted_on: str = "",
) -> LogisticModel:
    """A ``LogisticModel`` fitted as the module docstring says: shrunk towards ``prior`` (towards
    zero without one), coefficients bounded by ``signs`` (+1 >= 0, -1 <= 0, 0 or absent free),
    the ``fixed`` features' coefficients held at 0, lambda chosen by grouped cross-validated
    log loss (``_one_se_choice``)."""
    from scipy.special import expit

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-5] = 1.0  # (near-)constant: stored rounded to 6 places, must stay > 0
    z = (x - mean) / scale
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    w = w / w.sum()
    if prior is not None:
        beta0, b0 = _prior_in(prior, mean, scale)
    else:
        beta0 = np.zeros(x.shape[1])
        b0 = float(np.log((w @ y + 1e-3) / (w @ (1 - y) + 1e-3)))
    bounds = _coef_bounds(features, signs or {}, fixed)
    folds = _folds(y, groups, k, seed)

    def oof(lam: float) -> np.ndarray:
        pred = np.zeros(len(y))
        for test in folds:
            train = np.setdiff1d(np.arange(len(y)), test)
            wt = w[train] / w[train].sum()
            beta, b = _solve(z[train], y[train], wt, lam, beta0, b0, bounds)
            pred[test] = expit(z[test] @ beta + b)
        return pred

    preds = {lam: oof(lam) for lam in LAMBDA_GRID}
    best_lam, best_loss = _one_se_choice(y, preds, w, folds)
    pred = preds[best_lam]
    beta, b = _solve(z, y, w, best_lam, beta0, b0, bounds)
    threshold = 0.5
    if decision:
        grid = np.unique(np.round(pred, 3))
        accs = [float(w @ ((pred >= t) == y)) for t in grid]
        threshold = float(min(max(grid[int(np.argmax(accs))], 0.02), 0.98))
        b -= math.log(threshold / (1 - threshold))
    cv: dict[str, float] = {
        "lambda": best_lam,
        "log_loss": round(best_loss, 4),
        "auroc": round(_auroc(y, pred, w), 4),
        "accuracy": round(float(w @ ((pred >= threshold) == y)), 4),
        "threshold": round(threshold, 4),
        "n": float(len(y)),
        "positives": float(y.sum()),
        "folds": float(len(folds)),
    }
    if prior is not None:
        cv["prior_log_loss"] = round(_weighted_log_loss(y, prior.proba(x), w), 4)
        cv["prior_auroc"] = round(_auroc(y, prior.proba(x), w), 4)
    return LogisticModel(
        features=list(features),
        coef=[round(float(c), 6) for c in beta],
        intercept=round(b, 6),
        mean=[round(float(m), 6) for m in mean],
        scale=[round(float(s), 6) for s in scale],
        fitted_on=fitted_on,
        cv=cv,
    )


@dataclass
class Design:
    """One model's training data: features, labels, CV groups and row weights."""

    x: np.ndarray
    y: np.ndarray
    groups: list[str]
    weights: np.ndarray


def featurise(
    rows: Iterable[LabelRow], base: Params, cache: EmbeddingCache | None = None
) -> dict[str, Design]:
    """model name -> its ``Design`` over the rows (rows without features are skipped)."""
    cache = cache or shared_cache()
    acc: dict[str, tuple[list[np.ndarray], list[int], list[str], list[float]]] = {}
    for n, row in enumerate(rows):
        try:
            model, vec = row_features(row, base, cache)
        except ValueError:
            continue
        xs, ys, gs, ws = acc.setdefault(model, ([], [], [], []))
        xs.append(vec)
        ys.append(row.label)
        gs.append(row.group or f"row{n}")
        ws.append(row.weight)
    return {
        m: Design(np.stack(xs), np.array(ys), gs, np.array(ws))
        for m, (xs, ys, gs, ws) in acc.items()
    }


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
    for name, d in data.items():
        if len(set(d.y.tolist())) < 2:
            continue
        models[name] = fit_logistic(
            d.x,
            d.y,
            base.models[name].features,
            groups=d.groups,
            weights=d.weights,
            prior=base.models[name],
            signs=FEATURE_SIGNS[name],
            fixed=RULE_FEATURES.get(name, frozenset()),
            decision=name in DECISION_MODELS,
            fitted_on=f"{len(d.y)} labelled rows",
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
    support_fitted = {"support", "xenc"} & set(first.provenance.get("fitted_models", []))
    if any(r.dimension == "context_precision" for r in rows) and support_fitted:
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
