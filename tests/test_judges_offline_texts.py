"""``OfflineJudge.texts``: a judge that lists the texts it will embed without judging lists
the same texts judging asks its cache for (the dry pass of ``prepare`` records that), on the demo
set's questions with several kinds of answer and on edge cases; with the claim-support model
the judges that read claims against a text say None (only judging fills that model's pair
cache)."""

from __future__ import annotations

import copy

import pytest

from ragjudge.io.beir import load_testset
from ragjudge.judges.offline.base import OfflineJudge
from ragjudge.judges.offline.embed import EmbeddingCache, TextRecorder
from ragjudge.judges.offline.params import DEFAULT_PARAMS, MODEL_PARAMS, load_params
from ragjudge.judges.registry import available, create_judge
from ragjudge.resources import demo_dir
from ragjudge.schema import JudgeInput
from tests.test_judges_offline_prepare import ITEMS

EDGE = [
    JudgeInput(id="empty", question="Why is the sky blue?", answer="", contexts=["Light."]),
    JudgeInput(id="no-contexts", question="Who built it?", answer="Robert Stevenson.", contexts=[]),
    JudgeInput(
        id="blank-context",
        question="When was it lit?",
        answer="It was first lit in 1811 [1].",
        reference="1811",
        contexts=["   ", "It was first lit in 1811."],
    ),
    *ITEMS,  # the batched-preparation tests' items: abstentions, no reference, empty answer
]


def demo_items() -> list[JudgeInput]:
    """Each demo question with its reference, a one-sentence answer, a short answer and an
    uncited sentence from an unrelated document, over its judged documents plus two others."""
    ts = load_testset(demo_dir())
    docs = ts.doc_index()
    others = [d.text for d in ts.documents[:2]]
    items = []
    for case in ts.cases:
        contexts = [docs[d].text for d in case.relevant][:4] + others
        reference = case.reference or ""
        words = reference.split()
        answers = [
            reference,
            f"{contexts[0].split('. ')[0]} [1].",
            " ".join(words[-2:]).rstrip("."),
            others[-1].split(". ")[0],
        ]
        for i, answer in enumerate(answers):
            items.append(
                JudgeInput(
                    id=f"{case.id}-{i}",
                    question=case.question,
                    answer=answer,
                    reference=reference or None,
                    contexts=contexts,
                )
            )
    return items


def _judges(params_path) -> list[OfflineJudge]:
    params = load_params(params_path)
    cache = EmbeddingCache(TextRecorder())
    names = [n for n, backends in available().items() if "offline" in backends]
    return [create_judge(n, "offline", params=params, cache=cache) for n in names]


def _asked(judge: OfflineJudge, item: JudgeInput) -> list[str]:
    dry = copy.copy(judge)
    recorder = TextRecorder()
    dry.cache = EmbeddingCache(recorder)
    dry._judge(item)
    return recorder.texts


def test_listed_texts_are_what_judging_asks_for() -> None:
    items = [*demo_items(), *EDGE]
    listing = _judges(DEFAULT_PARAMS)
    assert len(listing) == 5
    compared = 0
    for judge in listing:
        for item in items:
            if judge.requires_reference and not item.reference:
                continue
            listed = judge.texts(item)
            assert listed is not None
            assert dict.fromkeys(listed) == dict.fromkeys(_asked(judge, item)), (
                judge.name,
                item.id,
            )
            compared += 1
    assert compared > 1000


@pytest.mark.parametrize(
    "name", ["faithfulness", "completeness", "context_recall", "context_precision"]
)
def test_with_the_claim_support_model_only_judging_lists_the_texts(name: str) -> None:
    judge = next(j for j in _judges(MODEL_PARAMS) if j.name == name)
    item = JudgeInput(
        id="x",
        question="When was the Bell Rock Lighthouse first lit?",
        answer="The Bell Rock Lighthouse was first lit in 1811 by its keepers.",
        reference="The lighthouse was first lit in 1811, four years after work began.",
        contexts=["The Bell Rock Lighthouse was first lit on 1 February 1811."],
    )
    assert judge.texts(item) is None
