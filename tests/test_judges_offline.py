"""Offline judges on small hand-made cases: numbers, negation, abstention, missing reference,
empty contexts, and the prefix consistency of context recall and precision."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from ragjudge.embedding import load_judge_encoder
from ragjudge.judges.offline import (
    OfflineAnswerRelevancyJudge,
    OfflineCompletenessJudge,
    OfflineContextPrecisionJudge,
    OfflineContextRecallJudge,
    OfflineFaithfulnessJudge,
)
from ragjudge.judges.offline.embed import EmbeddingCache
from ragjudge.judges.offline.params import DEFAULT_PARAMS, MODEL_PARAMS, load_params
from ragjudge.judges.offline.relevancy import relevancy_model
from ragjudge.judges.offline.segment import (
    claims,
    is_non_committal,
    question_aspects,
    short_answer,
    terse_answer,
)
from ragjudge.judges.registry import JUDGE_NAMES, create_judge
from ragjudge.protocols import Judge, PrefixJudge
from ragjudge.schema import JudgeInput, JudgeStatus

TOWER = (
    "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was completed in 1889 for "
    "the World's Fair. The tower is 330 metres tall and was designed by Gustave Eiffel's company."
)
BANANA = "Bananas are elongated yellow fruit grown in tropical regions such as Ecuador."
CHEESE = "Cheddar is a hard cheese that originated in the English village of Cheddar."
Q = "When was the Eiffel Tower completed and how tall is it?"
REF = "The Eiffel Tower was completed in 1889. It is 330 metres tall."


def item(answer: str = "", contexts: list[str] | None = None, **kw: str | None) -> JudgeInput:
    return JudgeInput(
        id=str(kw.pop("id", "x")),
        question=str(kw.pop("question", Q)),
        answer=answer,
        contexts=[TOWER, BANANA] if contexts is None else contexts,
        **kw,  # type: ignore[arg-type]
    )


def test_all_five_registered_under_offline() -> None:
    for name in JUDGE_NAMES:
        judge = create_judge(name, "offline")
        assert isinstance(judge, Judge)
        assert judge.name == name
        assert judge.version.startswith("offline-")
    assert isinstance(create_judge("context_recall", "offline"), PrefixJudge)
    assert isinstance(create_judge("context_precision", "offline"), PrefixJudge)


def test_segmentation_rules() -> None:
    got = claims("The tower opened in 1889 [2], and it is 330 metres tall; it stands in Paris.")
    assert got == ["The tower opened in 1889", "it is 330 metres tall", "it stands in Paris."]
    # a list is not split; a question and an abstention are no claims
    assert claims("Red, green and blue are primary colours.") == [
        "Red, green and blue are primary colours."
    ]
    assert claims("What is it? I don't know.") == []
    assert is_non_committal("The answer cannot be determined from the context.")
    assert not is_non_committal("The tower is 330 metres tall.")
    kinds = [
        a.answer_type
        for a in question_aspects("When and where was it built, and why was it built?")
    ]
    assert kinds == ["date", "place", "reason"]
    # the second wh-word may follow a preposition; "and" inside a clause does not split
    two = question_aspects("Who kept the light burning after the storm, and for how long?")
    assert [(a.text, a.answer_type) for a in two] == [
        ("Who kept the light burning after the storm", "person"),
        ("for how long", "number"),
    ]
    assert len(question_aspects("Who sailed from Lisbon and reached India in 1498?")) == 1


async def test_faithfulness_supported_vs_contradicted_numbers() -> None:
    judge = OfflineFaithfulnessJudge()
    good = await judge.judge(item("The Eiffel Tower was completed in 1889. It is 330 metres tall."))
    bad = await judge.judge(item("The Eiffel Tower was completed in 1925. It is 120 metres tall."))
    assert good.status == bad.status == JudgeStatus.ok
    assert good.score is not None and good.score >= 0.55
    assert good.evidence.features["credit"] == 1.0
    assert [c.verdict for c in good.evidence.claims] == ["supported", "supported"]
    assert good.evidence.claims[0].supporting_chunks == [0]
    assert bad.score is not None and bad.score < good.score - 0.2
    assert bad.evidence.claims[0].verdict != "supported"
    assert all(c.confidence is not None for c in bad.evidence.claims)


async def test_faithfulness_negation_and_names() -> None:
    judge = OfflineFaithfulnessJudge()
    neg = await judge.judge(item("The Eiffel Tower was not completed in 1889."))
    pos = await judge.judge(item("The Eiffel Tower was completed in 1889."))
    wrong_name = await judge.judge(item("The Eiffel Tower is a wrought-iron tower in Berlin."))
    right_name = await judge.judge(item("The Eiffel Tower is a wrought-iron tower in Paris."))
    assert neg.evidence.features["neg_mismatch"] == 1.0
    assert pos.score > neg.score
    assert wrong_name.evidence.features["ent_miss"] > 0
    assert right_name.score > wrong_name.score


async def test_dates_and_names_must_match_for_full_support() -> None:
    judge = OfflineFaithfulnessJudge()
    launch = "The probe was launched on Sunday, 30 July 2023 from Sriharikota, India."
    q = "When was the probe launched?"
    same = await judge.judge(
        item("The probe was launched on Sunday, 30 July 2023.", [launch], question=q)
    )
    other_day = await judge.judge(
        item("The probe was launched on Monday, 30 August 2023.", [launch], question=q)
    )
    assert same.evidence.claims[0].verdict == "supported"
    assert other_day.evidence.claims[0].verdict != "supported"
    assert other_day.evidence.features["num_miss"] > 0
    # the verb "may" is no month
    hedged = await judge.judge(item("The tower may be 330 metres tall."))
    assert hedged.evidence.features["num_miss"] == 0.0
    # one name of three missing: the words and the embedding alone would call it supported
    cast = "Christopher Nolan directed Oppenheimer. Cillian Murphy stars as J. Robert Oppenheimer."
    right = await judge.judge(item("Cillian Murphy stars as J. Robert Oppenheimer.", [cast]))
    wrong = await judge.judge(item("Brad Pitt stars as J. Robert Oppenheimer.", [cast]))
    assert right.evidence.claims[0].verdict == "supported"
    assert wrong.evidence.claims[0].verdict == "partial"


async def test_faithfulness_statuses() -> None:
    judge = OfflineFaithfulnessJudge()
    abstain = await judge.judge(item("I don't know."))
    assert abstain.status == JudgeStatus.no_claims and abstain.score is None
    assert "abstains" in (abstain.error or "")
    assert (await judge.judge(item(""))).status == JudgeStatus.invalid_input
    assert (await judge.judge(item("It is tall.", contexts=[" "]))).status == (
        JudgeStatus.invalid_input
    )


def test_a_short_answer_is_one_claim_unless_it_is_yes_no_a_question_or_an_abstention() -> None:
    assert short_answer("Rollo") == "Rollo"
    assert short_answer(" 1889 [2]") == "1889"
    assert short_answer("the 1970s") == "the 1970s"
    for not_short in ("Yes.", "no", "True", "Why?", "Unknown.", "I don't know.", "It", ""):
        assert short_answer(not_short) is None, not_short
    assert short_answer("the 10th century") == "the 10th century"  # a fragment (terse_answer)
    assert short_answer("It was completed in the 10th century.") is None  # a claim


@pytest.mark.parametrize("params", [DEFAULT_PARAMS, MODEL_PARAMS], ids=["v2", "v3"])
async def test_faithfulness_reads_a_short_answer_with_its_question(params: Path) -> None:
    judge = OfflineFaithfulnessJudge(params=params)
    q = "In what year was the Eiffel Tower completed?"
    right = await judge.judge(item("1889", question=q))
    wrong = await judge.judge(item("1925", question=q))
    place = await judge.judge(item("Paris", question="In which city is the Eiffel Tower?"))
    elsewhere = await judge.judge(item("Berlin", question="In which city is the Eiffel Tower?"))
    for r in (right, wrong, place, elsewhere):
        assert r.status == JudgeStatus.ok and r.score is not None
        assert r.evidence.features["short_answer"] == 1.0
    assert right.score > wrong.score + 0.1 and place.score > elsewhere.score + 0.1
    assert wrong.evidence.claims[0].verdict == "unsupported"  # its number is not in a chunk
    polar = await judge.judge(item("Yes.", question="Is the Eiffel Tower in Paris?"))
    assert polar.status == JudgeStatus.no_claims


BRIDGE = (
    "The Larch Street Bridge was designed by Anna Kovacs and opened in 1931. "
    "Its lighting was installed by Peter Lund in 1990, when the deck was also repaved."
)


@pytest.mark.parametrize("params", [DEFAULT_PARAMS, MODEL_PARAMS], ids=["v2", "v3"])
async def test_a_short_answer_the_chunk_gives_for_something_else_is_not_supported(
    params: Path,
) -> None:
    """Both names and both years are in the chunk; only the one it gives as the answer to the
    question is supported (the ``short_support`` model)."""
    judge = OfflineFaithfulnessJudge(params=params)
    cases = [
        ("Who designed the Larch Street Bridge?", "Anna Kovacs", "Peter Lund"),
        ("When did the Larch Street Bridge open?", "in 1931", "in 1990"),
        ("Who installed the lighting of the bridge?", "Peter Lund", "Anna Kovacs"),
        ("When was the bridge's lighting installed?", "1990", "1931"),
    ]
    margins = []
    for q, right, wrong in cases:
        r = await judge.judge(item(right, question=q, contexts=[BRIDGE]))
        w = await judge.judge(item(wrong, question=q, contexts=[BRIDGE]))
        assert r.score is not None and w.score is not None
        assert r.evidence.claims[0].verdict == "supported", (q, r.score)
        assert "near_q_cov" in r.evidence.features
        margins.append(r.score - w.score)
    assert min(margins) > 0.0 and sum(margins) / len(margins) > 0.2, margins
    assert sum(m > 0.3 for m in margins) >= 2, margins


@pytest.mark.parametrize("params", [DEFAULT_PARAMS, MODEL_PARAMS], ids=["v2", "v3"])
async def test_a_short_answer_one_hop_from_the_question_is_supported(params: Path) -> None:
    """The answer's sentence does not match the question, but it names the builder that the
    sentence matching the question names: one hop, as multi-hop questions need."""
    judge = OfflineFaithfulnessJudge(params=params)
    light = (
        "Greyhaven Rock Lighthouse was built by the engineer Tomas Brell. "
        "Tomas Brell was born in the port town of Kelmouth in 1790."
    )
    q = "In which town was the builder of Greyhaven Rock Lighthouse born?"
    r = await judge.judge(item("Kelmouth", question=q, contexts=[light]))
    assert r.evidence.claims[0].verdict == "supported", r.evidence.features
    assert r.evidence.features["q_cos_gap"] == 0.0  # the hop reaches the question's sentence
    year = "In what year was the builder of Greyhaven Rock Lighthouse born?"
    right = await judge.judge(item("1790", question=year, contexts=[light]))
    wrong = await judge.judge(item("1811", question=year, contexts=[light]))
    assert right.score is not None and wrong.score is not None
    assert right.evidence.claims[0].verdict == "supported"
    assert wrong.evidence.claims[0].verdict == "unsupported"  # not in the chunk


async def test_without_the_short_support_model_or_a_question_a_short_answer_is_a_claim() -> None:
    base = load_params(DEFAULT_PARAMS)
    models = {k: v for k, v in base.models.items() if k != "short_support"}
    judge = OfflineFaithfulnessJudge(params=base.model_copy(update={"models": models}))
    r = await judge.judge(item("Anna Kovacs", question="Who designed it?", contexts=[BRIDGE]))
    assert r.status == JudgeStatus.ok and r.evidence.features["short_answer"] == 1.0
    assert "near_q_cov" not in r.evidence.features and "cos_max" in r.evidence.features
    # nor with it when the question has no content word: there is nothing to be the answer to
    bare = OfflineFaithfulnessJudge(params=DEFAULT_PARAMS)
    r = await bare.judge(item("Anna Kovacs", question="Who is it?", contexts=[BRIDGE]))
    assert r.status == JudgeStatus.ok and "near_q_cov" not in r.evidence.features


async def test_answer_relevancy_rewards_full_answers() -> None:
    judge = OfflineAnswerRelevancyJudge()
    full = await judge.judge(item("It was completed in 1889 and it is 330 metres tall."))
    partial = await judge.judge(item("It is a tower."))
    off = await judge.judge(item(BANANA))
    idk = await judge.judge(item("I'm sorry, I cannot answer that."))
    assert full.score is not None and partial.score is not None and off.score is not None
    assert full.score > partial.score
    assert full.score > off.score
    assert idk.status == JudgeStatus.ok and idk.score == 0.0
    assert "type_ok" in full.evidence.features and full.evidence.explanation


class RecordingEncoder:
    """The judges' encoder, recording every text it is asked to encode."""

    def __init__(self) -> None:
        self.inner = load_judge_encoder()
        self.name = self.inner.name
        self.seen: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.seen += list(texts)
        return self.inner.encode(texts)


async def test_relevancy_and_completeness_read_an_answer_without_its_citation_markers() -> None:
    """ "[1]" is no part of what an answer says: a cited answer scores as the same answer
    uncited, and the judges encode its sentences as the contexts hold them."""
    encoder = RecordingEncoder()
    cache = EmbeddingCache(encoder)
    relevancy = OfflineAnswerRelevancyJudge(cache=cache)
    completeness = OfflineCompletenessJudge(cache=cache)
    plain = "It was completed in 1889. It is 330 metres tall."
    cited = "It was completed in 1889. [1] It is 330 metres tall. [1, 2]"
    for judge in (relevancy, completeness):
        a = await judge.judge(item(plain, reference=REF))
        b = await judge.judge(item(cited, reference=REF))
        assert a.score is not None and a.score == b.score
        assert a.evidence.features == b.evidence.features
    assert encoder.seen and not [t for t in encoder.seen if "[" in t]


def test_a_terse_answer_is_a_fragment_not_a_sentence() -> None:
    for fragment in (
        "Gustave Eiffel",
        "1889",
        "in 1889.",
        "the 19th century",
        "Paris, France",
        "May 1889",  # a month, not "may"
        "the US",
        "World War I",
    ):
        assert terse_answer(fragment), fragment
    for not_terse in (
        "It is a tower.",  # a pronoun and a verb make it a sentence
        "They may.",
        "I agree.",
        "It was completed in 1889.",
        "a tall iron tower in central Paris",  # more than four words
        "Yes.",
        "Who?",
        "I don't know.",
        "",
    ):
        assert not terse_answer(not_terse), not_terse


@pytest.mark.parametrize("params", [DEFAULT_PARAMS, MODEL_PARAMS], ids=["v2", "v3"])
async def test_answer_relevancy_reads_a_fragment_answer_with_its_own_model(params: Path) -> None:
    judge = OfflineAnswerRelevancyJudge(params=params)
    who, when = "Who designed the Eiffel Tower?", "In what year was the Eiffel Tower completed?"
    name = await judge.judge(item("Gustave Eiffel", question=who))
    year = await judge.judge(item("1889", question=when))
    name_for_when = await judge.judge(item("Gustave Eiffel", question=when))
    year_for_who = await judge.judge(item("1889", question=who))
    for r in (name, year, name_for_when, year_for_who):
        assert r.score is not None and "fragment answer" in r.evidence.explanation
    # a correct, direct one-phrase answer is relevant, and beats one of the wrong kind
    assert name.score >= 0.5 and year.score >= 0.5
    assert name.score > year_for_who.score + 0.1 and year.score > name_for_when.score + 0.1
    assert relevancy_model("It was completed in 1889.", judge.params) == "relevancy"


async def test_parameters_without_a_fragment_model_read_fragments_as_sentences() -> None:
    full = load_params()
    assert "short_relevancy" in full.models
    models = {k: v for k, v in full.models.items() if k != "short_relevancy"}
    bare = full.model_copy(update={"models": models})
    assert relevancy_model("1889", bare) == "relevancy"
    q = "In what year was the Eiffel Tower completed?"
    old = await OfflineAnswerRelevancyJudge(params=bare).judge(item("1889", question=q))
    new = await OfflineAnswerRelevancyJudge(params=full).judge(item("1889", question=q))
    assert "fragment answer" not in old.evidence.explanation
    assert old.score is not None and new.score is not None and new.score > old.score


async def test_abstention_on_unanswerable_question_scores_one() -> None:
    unans = "The question cannot be answered from the available information."
    rel = OfflineAnswerRelevancyJudge()
    comp = OfflineCompletenessJudge()
    right = item("I don't know.", reference=unans)
    wrong = item("It is 330 metres tall.", reference=unans)
    assert (await rel.judge(right)).score == 1.0
    assert (await rel.judge(wrong)).score == 0.0
    assert (await comp.judge(right)).score == 1.0
    assert (await comp.judge(wrong)).score == 0.0


async def test_completeness_with_and_without_reference() -> None:
    judge = OfflineCompletenessJudge()
    both = await judge.judge(
        item("It was completed in 1889. It is 330 metres tall.", reference=REF)
    )
    half = await judge.judge(item("It was completed in 1889.", reference=REF))
    assert both.score == 1.0
    assert half.score is not None and half.score < both.score
    assert len(half.evidence.key_points) == 2
    assert [k.verdict for k in half.evidence.key_points] == ["supported", "unsupported"]
    noref = await judge.judge(item("It was completed in 1889. It is 330 metres tall."))
    assert noref.status == JudgeStatus.ok
    assert noref.evidence.features["from_reference"] == 0.0
    assert len(noref.evidence.key_points) == 2  # "when ..." and "how tall ..."


async def test_context_recall_needs_reference_and_fills_matrix() -> None:
    judge = OfflineContextRecallJudge()
    skipped = await judge.judge(item(""))
    assert skipped.status == JudgeStatus.skipped_missing_reference
    res = await judge.judge(item("", contexts=[BANANA, TOWER, CHEESE], reference=REF))
    assert res.status == JudgeStatus.ok and res.score == 1.0
    matrix = res.evidence.support_matrix
    assert matrix is not None and len(matrix) == 2 and all(len(r) == 3 for r in matrix)
    assert all(row[1] >= 0.5 > row[0] for row in matrix)
    assert [c.supporting_chunks for c in res.evidence.claims] == [[1], [1]]
    assert (await judge.judge(item("", contexts=[], reference=REF))).status == (
        JudgeStatus.invalid_input
    )


@pytest.mark.parametrize("params", [DEFAULT_PARAMS, MODEL_PARAMS], ids=["v2", "v3"])
async def test_a_short_reference_is_recalled_by_the_chunk_that_answers_with_it(
    params: Path,
) -> None:
    """A chunk that holds "1931" as the year of something else does not recall the reference
    "1931" for the bridge's opening; at k = 2 the chunk that answers does."""
    judge = OfflineContextRecallJudge(params=params)
    other = "In 1931 the city council also built a new harbour wall along the old quay."
    q = "When did the Larch Street Bridge open?"
    res = await judge.judge(item("", question=q, contexts=[other, BRIDGE], reference="1931"))
    assert res.status == JudgeStatus.ok and res.score == 1.0
    assert res.evidence.claims[0].supporting_chunks == [1]
    assert judge.at_k(res, 1).score == 0.0  # the k-sweep's recall@1
    direct = await judge.judge(item("", question=q, contexts=[other], reference="1931"))
    assert direct.score == 0.0
    precision = OfflineContextPrecisionJudge(params=params)
    ranked = await precision.judge(item("", question=q, contexts=[BRIDGE, other], reference="1931"))
    assert [c.relevant for c in ranked.evidence.chunks] == [True, False]


@pytest.mark.parametrize("judge_cls", [OfflineContextRecallJudge, OfflineContextPrecisionJudge])
async def test_prefix_consistency(judge_cls: type) -> None:
    judge = judge_cls()
    contexts = [BANANA, TOWER, CHEESE, TOWER + " It is repainted every seven years."]
    full = await judge.judge(item("", contexts=contexts, reference=REF))
    assert full.status == JudgeStatus.ok
    for k in range(1, len(contexts) + 1):
        direct = await judge.judge(item("", contexts=contexts[:k], reference=REF))
        derived = judge.at_k(full, k)
        assert derived.score == pytest.approx(direct.score)
        assert derived.evidence.support_matrix == direct.evidence.support_matrix
        assert [c.relevant for c in derived.evidence.chunks] == [
            c.relevant for c in direct.evidence.chunks
        ]


async def test_context_precision_ranks_relevant_chunks() -> None:
    judge = OfflineContextPrecisionJudge()
    good = await judge.judge(item("", contexts=[TOWER, BANANA]))
    late = await judge.judge(item("", contexts=[BANANA, CHEESE, TOWER]))
    assert [c.relevant for c in good.evidence.chunks] == [True, False]
    assert good.score == 1.0
    assert late.score is not None and late.score == pytest.approx(1 / 3)
