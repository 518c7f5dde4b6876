"""Claim support: the claims x chunks matrix of support probabilities and per-claim verdicts.

``M[i][j]``: the probability that chunk j supports claim i, from that pair alone, computed by
one of two scorers, whichever the offline parameters hold (``params``):

- the claim-support model (``params.support_model``, the ``xenc`` calibration present): the
  cross-encoder's best-window logit of the claim against the chunk and the share of the
  claim's words in the chunk's best window (``supportmodel.SupportModel.chunk_scores``),
  through the fitted calibration;
- otherwise the feature model ``support`` on ``features.support_features`` (v2).

A short answer or reference ("Rollo", "1844"; ``segment.short_answer``) is one claim read as the
answer to its question instead, when ``short_support_model`` gives a model (``short_support``:
the ``short_support`` model on ``features.short_support_features``); ``points_support`` makes
that choice, for an answer (the faithfulness judge) and for a reference (``reference_support``:
context recall and precision).

Each is then capped by rules: at ``PARTIAL_CAP`` (partial) when the chunk lacks some of the
claim's numbers and dates (``features.quantities``) or some of its names, at ``UNSUPPORTED_CAP``
when it lacks all of the claim's numbers and dates or flips its negation
(``features.RULE_FEATURES``; the model scorer takes these from words alone,
``features.lexical_checks``). The decision threshold is folded into the models' intercepts at
fitting time, so ``M >= 0.5`` is the decision (the threshold ``ragjudge.judges.prefix`` uses).
A claim's verdict uses its best chunk: ``supported`` if max_j M >= 0.5, ``partial`` if it is in
[PARTIAL_FLOOR, 0.5), else ``unsupported``; ``supporting_chunks`` are the chunks with M >= 0.5
(the best one for partial).

``question``: words of the question count as given (completeness passes it, so "It was
completed in 1889" covers "The Eiffel Tower was completed in 1889" when the question names the
tower): the feature scorer ignores its stems, the model reads the question before the chunk.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ragjudge.judges.offline.embed import EmbeddingCache
from ragjudge.judges.offline.features import (
    SHORT_SUPPORT_FEATURES,
    SUPPORT_FEATURES,
    TextProfile,
    lexical_checks,
    short_support_features,
    short_support_texts,
    stems,
    support_features,
    support_texts,
)
from ragjudge.judges.offline.params import LogisticModel, Params
from ragjudge.judges.offline.segment import reference_points, short_answer
from ragjudge.judges.prefix import SUPPORT_THRESHOLD
from ragjudge.schema import ClaimVerdict, Verdict

PARTIAL_FLOOR = 0.35
PARTIAL_CAP = 0.45
"""The most support a chunk can give a claim some of whose numbers, dates or names it lacks
(partial)."""
UNSUPPORTED_CAP = 0.3
"""The most support a chunk can give a claim whose numbers it all lacks or whose negation it
flips (unsupported: below ``PARTIAL_FLOOR``)."""
VERDICT_CREDIT = {"supported": 1.0, "partial": 0.5, "unsupported": 0.0}
"""Credit per verdict (the LLM judges' formula)."""
CHECK_FEATURES = ("num_miss", "ent_miss", "neg_mismatch")
"""``features.lexical_checks``: the rules' evidence, from words alone."""
MODEL_FEATURES = ("xenc_logit", "xenc_overlap", *CHECK_FEATURES)
"""The evidence features of the model scorer, per claim and chunk."""


class Support(NamedTuple):
    """``matrix``: ``(claims, chunks)`` probabilities; ``features``: ``(claims, chunks,
    len(names))`` evidence features named ``names``."""

    matrix: np.ndarray
    features: np.ndarray
    names: tuple[str, ...]

    def best_features(self) -> dict[str, float]:
        """Each feature at each claim's best chunk, averaged over claims."""
        if self.features.size == 0 or self.matrix.size == 0:
            return {}
        best = self.matrix.argmax(axis=1)
        rows = self.features[np.arange(len(best)), best]
        return {f: round(float(v), 4) for f, v in zip(self.names, rows.mean(axis=0), strict=True)}


def support_matrix(
    claims: list[str],
    chunks: list[TextProfile],
    params: Params,
    cache: EmbeddingCache,
    *,
    question: str = "",
) -> Support:
    """The support of each claim by each chunk (module docstring)."""
    calibration = params.support_model
    if calibration is not None:
        return _model_support(claims, chunks, calibration, question, params.support_card)
    return _feature_support(claims, chunks, params.models["support"], cache, question)


def short_support_model(short: str | None, question: str, params: Params) -> LogisticModel | None:
    """The model that reads a short answer's support (``short_support``), when one does:
    ``short`` is a short answer (``segment.short_answer``), the question has a content word to
    match (without one there is nothing to be the answer to) and ``params`` hold the model.
    Otherwise None: the answer is read as a claim with the question's words given."""
    if short is None or not stems(question):
        return None
    return params.models.get("short_support")


def reference_support(
    reference: str,
    question: str,
    chunks: list[TextProfile],
    params: Params,
    cache: EmbeddingCache,
) -> tuple[list[str], Support]:
    """The key points of ``reference`` and their support by each chunk (context recall and
    precision): a short reference ("France", "William the Conqueror"; ``segment.short_answer``)
    is one point, read as the answer to ``question`` (``short_support``) when
    ``short_support_model`` gives a model; otherwise the points are
    ``segment.reference_points`` and ``support_matrix`` reads them as claims."""
    short, points = _reference_claims(reference, question, params)
    return points, points_support(short, points, question, chunks, params, cache)


def _reference_claims(
    reference: str, question: str, params: Params
) -> tuple[str | None, list[str]]:
    """``reference`` as a short answer (else None) and its points (``reference_support``)."""
    short = short_answer(reference)
    points = reference_points(reference)
    if short is not None and short_support_model(short, question, params) is not None:
        points = [short]
    return short, points


def reference_texts(
    reference: str, question: str, chunks: list[TextProfile], params: Params
) -> list[str] | None:
    """The texts ``reference_support`` embeds (None: not known without judging, as
    ``points_texts``)."""
    short, points = _reference_claims(reference, question, params)
    return points_texts(short, points, question, chunks, params)


def points_texts(
    short: str | None,
    points: list[str],
    question: str,
    chunks: list[TextProfile],
    params: Params,
) -> list[str] | None:
    """The texts ``points_support`` embeds, or None with the claim-support model, whose pairs
    are cached only by judging (``OfflineJudge.prepare`` then makes a dry pass)."""
    if short is not None and short_support_model(short, question, params) is not None:
        return short_support_texts(question, chunks)
    return support_matrix_texts(points, chunks, params)


def support_matrix_texts(
    claims: list[str], chunks: list[TextProfile], params: Params
) -> list[str] | None:
    """The texts ``support_matrix`` embeds, or None with the claim-support model
    (``points_texts``)."""
    if params.support_model is not None:
        return None
    return [t for c in chunks for t in support_texts(claims, c)]


def points_support(
    short: str | None,
    points: list[str],
    question: str,
    chunks: list[TextProfile],
    params: Params,
    cache: EmbeddingCache,
    *,
    given: str = "",
) -> Support:
    """The support of an answer's or a reference's ``points`` by each chunk, read one of two
    ways: ``short`` (the text as a short answer, ``segment.short_answer``, else None) as the
    answer to ``question`` when ``short_support_model`` gives a model (``short_support``);
    otherwise ``points`` as claims (``support_matrix``, ``given``'s words counting as given)."""
    model = short_support_model(short, question, params)
    if short is not None and model is not None:
        return short_support(short, question, chunks, model, cache)
    return support_matrix(points, chunks, params, cache, question=given)


def short_support(
    answer: str,
    question: str,
    chunks: list[TextProfile],
    model: LogisticModel,
    cache: EmbeddingCache,
) -> Support:
    """The ``(1, chunks)`` support of a short answer (``segment.short_answer``) read as the
    answer to ``question``: the ``short_support`` model on ``features.short_support_features``,
    capped by the rules as claims are (the question's words count as given)."""
    names = (*SHORT_SUPPORT_FEATURES, *CHECK_FEATURES)
    feats = np.zeros((1, len(chunks), len(names)))
    if not chunks:
        return Support(np.zeros((1, 0)), feats, names)
    given = frozenset(stems(question))
    feats[0, :, : len(SHORT_SUPPORT_FEATURES)] = short_support_features(
        question, answer, chunks, cache
    )
    feats[0, :, len(SHORT_SUPPORT_FEATURES) :] = [lexical_checks(answer, c, given) for c in chunks]
    probs = model.proba(feats[0, :, : len(SHORT_SUPPORT_FEATURES)])[None, :]
    checks = feats[:, :, len(SHORT_SUPPORT_FEATURES) :]
    matrix = _capped(probs, checks[:, :, 0], checks[:, :, 1], checks[:, :, 2])
    return Support(matrix, feats, names)


def _capped(
    probs: np.ndarray, num_miss: np.ndarray, ent_miss: np.ndarray, neg: np.ndarray
) -> np.ndarray:
    cap = np.where((num_miss >= 1.0) | (neg > 0), UNSUPPORTED_CAP, PARTIAL_CAP)
    capped = (num_miss > 0) | (neg > 0) | (ent_miss > 0)
    out: np.ndarray = np.where(capped, np.minimum(probs, cap), probs)
    return out


def _model_support(
    claims: list[str],
    chunks: list[TextProfile],
    calibration: LogisticModel,
    question: str,
    card: str,
) -> Support:
    from ragjudge.judges.offline.supportmodel import shared_model

    feats = np.zeros((len(claims), len(chunks), len(MODEL_FEATURES)))
    if not claims or not chunks:
        return Support(np.zeros((len(claims), len(chunks))), feats, MODEL_FEATURES)
    given_text = question.strip()
    texts = [f"{given_text} {c.text}" if given_text else c.text for c in chunks]
    logits, shares = shared_model(card).chunk_scores(claims, texts)
    given = frozenset(stems(question))
    feats[:, :, 0] = logits
    feats[:, :, 1] = shares
    for i, claim in enumerate(claims):
        for j, chunk in enumerate(chunks):
            feats[i, j, 2:] = lexical_checks(claim, chunk, given)
    probs = calibration.proba(feats[:, :, :2].reshape(-1, 2)).reshape(logits.shape)
    matrix = _capped(probs, feats[:, :, 2], feats[:, :, 3], feats[:, :, 4])
    return Support(matrix, feats, MODEL_FEATURES)


def _feature_support(
    claims: list[str],
    chunks: list[TextProfile],
    model: LogisticModel,
    cache: EmbeddingCache,
    question: str,
) -> Support:
    given = frozenset(stems(question))
    feats = np.zeros((len(claims), len(chunks), len(SUPPORT_FEATURES)))
    for j, chunk in enumerate(chunks):
        feats[:, j, :] = support_features(claims, chunk, cache, given=given)
    if not claims or not chunks:
        return Support(np.zeros((len(claims), len(chunks))), feats, SUPPORT_FEATURES)
    probs = model.proba(feats.reshape(-1, len(SUPPORT_FEATURES))).reshape(len(claims), -1)
    matrix = _capped(
        probs,
        feats[:, :, SUPPORT_FEATURES.index("num_miss")],
        feats[:, :, SUPPORT_FEATURES.index("ent_miss")],
        feats[:, :, SUPPORT_FEATURES.index("neg_mismatch")],
    )
    return Support(matrix, feats, SUPPORT_FEATURES)


def verdict(p: float, *, partial: bool = True) -> Verdict:
    if p >= SUPPORT_THRESHOLD:
        return "supported"
    if partial and p >= PARTIAL_FLOOR:
        return "partial"
    return "unsupported"


def claim_verdicts(
    claims: list[str], matrix: np.ndarray, *, partial: bool = True
) -> list[ClaimVerdict]:
    """One verdict per claim from its row of the support matrix (see the module docstring)."""
    out: list[ClaimVerdict] = []
    for i, claim in enumerate(claims):
        row = matrix[i] if matrix.shape[1] else np.zeros(0)
        best = float(row.max()) if row.size else 0.0
        v = verdict(best, partial=partial)
        chunks = [int(j) for j in np.flatnonzero(row >= SUPPORT_THRESHOLD)]
        if v == "partial":
            chunks = [int(np.argmax(row))]
        out.append(
            ClaimVerdict(
                claim=claim,
                verdict=v,
                supporting_chunks=chunks,
                confidence=round(best if v != "unsupported" else 1.0 - best, 4),
                rationale=f"best chunk {int(np.argmax(row))} at p={best:.2f}" if row.size else None,
            )
        )
    return out
