"""The shipped claim-support model (``ragjudge.judges.offline.supportmodel``) and how the offline
judges use it (``support.support_matrix`` with the ``xenc`` calibration of ``params/v3.json``,
opt-in: the default ``params/v2.json`` reads support from features)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragjudge.errors import ConfigError
from ragjudge.judges.offline import (
    OfflineCompletenessJudge,
    OfflineContextRecallJudge,
    OfflineFaithfulnessJudge,
)
from ragjudge.judges.offline.params import DEFAULT_PARAMS, MODEL_PARAMS, Params, load_params
from ragjudge.judges.offline.supportmodel import META_FILE, NO_EVIDENCE, ModelCard, shared_model
from ragjudge.schema import JudgeInput, JudgeStatus

CHUNKS = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
    "It was completed in 1889 for the World's Fair.",
    "Gustave Eiffel's company designed and built the tower.",
    "Honey bees communicate the location of food with the waggle dance.",
]
QUESTION = "When was the Eiffel Tower completed?"
V3 = load_params(MODEL_PARAMS)


def _item(answer: str, **kw: object) -> JudgeInput:
    return JudgeInput(id="x", question=QUESTION, answer=answer, contexts=CHUNKS, **kw)


def test_shipped_model_fits_the_package_budget_and_records_how_it_was_made() -> None:
    card = ModelCard.model_validate_json(META_FILE.read_text())
    model_file = META_FILE.parent / card.model_file
    assert model_file.stat().st_size <= 30 * 2**20  # int8, at most 30 MB
    training = card.training
    assert training["seed"] == 17 and training["command"] and training["mix"]
    assert training["excluded"] == []  # the shipped model saw every training set
    assert card.figures["chosen"] == "int8"
    assert card.figures["validation_auroc"]["int8"]["mean"] > 0.65


def test_chunk_scores_are_per_chunk_so_a_prefix_of_chunks_is_a_prefix_of_columns() -> None:
    model = shared_model()
    claims = ["The Eiffel Tower was completed in 1889.", "Bees dance to show where food is."]
    logits, shares = model.chunk_scores(claims, CHUNKS)
    assert logits.shape == shares.shape == (2, 3)
    first, first_shares = model.chunk_scores(claims, CHUNKS[:2])
    np.testing.assert_allclose(first, logits[:, :2])
    np.testing.assert_allclose(first_shares, shares[:, :2])
    # each claim's best chunk is the one about it
    assert int(np.argmax(logits[0])) == 0 and int(np.argmax(logits[1])) == 2
    assert shares[0, 0] == 1.0
    empty, _ = model.chunk_scores(claims, ["   "])
    assert (empty == NO_EVIDENCE).all()


async def test_faithfulness_score_is_the_mean_best_chunk_probability() -> None:
    judge = OfflineFaithfulnessJudge(params=V3)
    assert judge.version.endswith(f".{shared_model().digest}")
    res = await judge.judge(
        _item("The Eiffel Tower was completed in 1889. It was built for the World's Fair.")
    )
    assert res.status == JudgeStatus.ok and res.evidence is not None
    assert [c.verdict for c in res.evidence.claims] == ["supported", "supported"]
    # score = mean over claims of the best chunk's P; each claim's confidence is that P
    best = [c.confidence for c in res.evidence.claims]
    assert res.score == pytest.approx(float(np.mean(best)), abs=1e-3)
    other = await judge.judge(_item("The Eiffel Tower was completed in 1889."))
    assert other.score != res.score  # continuous: no tie at 1.0 for two faithful answers
    wrong = await judge.judge(_item("The Eiffel Tower was completed in 1925."))
    assert wrong.score is not None and other.score is not None
    assert wrong.score < other.score - 0.2


async def test_a_swapped_name_or_flipped_negation_is_not_supported() -> None:
    judge = OfflineFaithfulnessJudge(params=V3)
    right = await judge.judge(_item("The Eiffel Tower is in Paris."))
    berlin = await judge.judge(_item("The Eiffel Tower is in Berlin."))
    negated = await judge.judge(_item("The Eiffel Tower was not completed in 1889."))
    assert right.evidence and berlin.evidence and negated.evidence
    assert right.evidence.claims[0].verdict == "supported"
    assert berlin.evidence.claims[0].verdict != "supported"
    assert negated.evidence.claims[0].verdict == "unsupported"
    assert negated.evidence.features["neg_mismatch"] == 1.0


async def test_completeness_reads_the_question_as_given() -> None:
    judge = OfflineCompletenessJudge(params=V3)
    reference = "The Eiffel Tower was completed in 1889."
    short = await judge.judge(_item("It was completed in 1889.", reference=reference))
    wrong = await judge.judge(_item("It was completed in 1925.", reference=reference))
    assert short.evidence and short.evidence.key_points
    assert short.evidence.key_points[0].verdict == "supported" and short.score == 1.0
    assert wrong.score == 0.0


async def test_context_recall_prefix_derivation_is_exact_with_the_model() -> None:
    judge = OfflineContextRecallJudge(params=V3)
    item = _item(
        "", reference="The tower was completed in 1889. Gustave Eiffel's company built it."
    )
    full = await judge.judge(item)
    for k in (1, 2):
        direct = await judge.judge(item.model_copy(update={"contexts": CHUNKS[:k]}))
        derived = judge.at_k(full, k)
        assert derived.score == direct.score
        assert derived.evidence and direct.evidence
        assert derived.evidence.support_matrix == direct.evidence.support_matrix


async def test_the_default_v2_judges_read_features_and_v3_is_another_version() -> None:
    v2 = load_params()
    assert DEFAULT_PARAMS.name == "v2.json" and v2.support_model is None
    judge = OfflineFaithfulnessJudge()
    assert judge.version != OfflineFaithfulnessJudge(params=V3).version
    res = await judge.judge(_item("The Eiffel Tower was completed in 1889."))
    assert res.evidence is not None and "cos_max" in res.evidence.features


def test_params_refuse_an_unknown_model_or_wrong_calibration_features() -> None:
    raw = json.loads(MODEL_PARAMS.read_text())
    xenc = raw["models"]["xenc"]
    with pytest.raises(ValueError, match="unknown model 'extra'"):
        Params.model_validate(dict(raw, models=raw["models"] | {"extra": xenc}))
    bad = dict(xenc, features=["xenc_logit", "other"])
    with pytest.raises(ValueError, match="model 'xenc' has features"):
        Params.model_validate(dict(raw, models=raw["models"] | {"xenc": bad}))


def test_params_name_the_model_card_they_calibrate() -> None:
    assert V3.support_card == "support.json"
    assert shared_model(V3.support_card) is shared_model()
    other = V3.model_copy(update={"support_card": "no-such-card.json"})
    with pytest.raises(ConfigError, match=r"no-such-card\.json"):
        OfflineFaithfulnessJudge(params=other)
