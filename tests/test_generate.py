"""The extractive generator and the generation loop (offline)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

import pytest

from ragjudge.errors import ConfigError, DataError
from ragjudge.generate import ExtractiveGenerator, answer_key, build_generator, generate_answers
from ragjudge.generate.extractive import NO_ANSWER
from ragjudge.schema import Answer, Document, Ranking, ScoredDoc, TestCase

DOCS = [
    Document(id="d1", text="The Corrow Lights Board was created in 1786. It met at Port Elwyn."),
    Document(id="d2", text="Its lighthouses were funded by light dues of one penny per ton."),
    Document(id="d3", text="Tallow candles burned in the glazed lantern of the harbour light."),
]
CASES = [
    TestCase(id="q1", question="How were the lighthouses funded?"),
    TestCase(id="q2", question="What is the boiling point of mercury?"),
]


def ranking(qid: str, ids: Sequence[str]) -> Ranking:
    return Ranking(
        query_id=qid, docs=[ScoredDoc(doc_id=d, score=1.0 - i / 10) for i, d in enumerate(ids)]
    )


async def test_extractive_cites_the_answering_sentence_and_abstains_otherwise() -> None:
    gen = ExtractiveGenerator()
    a = await gen.generate(CASES[0], [DOCS[0], DOCS[1]], 2)
    assert a.text.startswith("Its lighthouses were funded by light dues") and a.text.endswith("[2]")
    assert a.citations == [1] and not a.abstained
    assert a.context_ids == ["d1", "d2"] and a.contexts == [DOCS[0].text, DOCS[1].text]
    b = await gen.generate(CASES[1], DOCS, 3)
    assert b.abstained and b.text == NO_ANSWER and b.citations == []
    empty = await gen.generate(CASES[0], [], 0)
    assert empty.abstained


class CountingGenerator:
    name = "counting"
    version = "v0"

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.fail_on = fail_on

    async def generate(self, case: TestCase, contexts: Sequence[Document], k: int) -> Answer:
        self.calls.append((case.id, tuple(d.id for d in contexts)))
        await asyncio.sleep(0)
        if case.id == self.fail_on:
            raise RuntimeError("boom")
        return Answer(
            case_id=case.id,
            k=k,
            text=f"{case.id}:{len(contexts)}",
            context_ids=[d.id for d in contexts],
            contexts=[d.text for d in contexts],
            generator=self.name,
        )


async def test_loop_generates_each_distinct_context_list_once() -> None:
    rankings = {"q1": ranking("q1", ["d2", "d1"]), "q2": ranking("q2", ["d3", "d1", "d2"])}
    gen = CountingGenerator()
    answers = await generate_answers(CASES, rankings, DOCS, [1, 2, 3, 5], gen, concurrency=2)
    # q1 has 2 docs: k=2,3,5 share one context list
    assert sorted(gen.calls) == sorted(
        [
            ("q1", ("d2",)),
            ("q1", ("d2", "d1")),
            ("q2", ("d3",)),
            ("q2", ("d3", "d1")),
            ("q2", ("d3", "d1", "d2")),
        ]
    )
    assert [(a.case_id, a.k) for a in answers] == [
        ("q1", 1),
        ("q1", 2),
        ("q1", 3),
        ("q1", 5),
        ("q2", 1),
        ("q2", 2),
        ("q2", 3),
        ("q2", 5),
    ]
    assert answers[3].text == answers[1].text and answers[3].context_ids == ["d2", "d1"]
    # a second run with the answers of the first never generates again
    again = CountingGenerator()
    existing = {answer_key(a): a for a in answers}
    redo = await generate_answers(CASES, rankings, DOCS, [1, 2, 3, 5], again, existing=existing)
    assert again.calls == [] and [a.text for a in redo] == [a.text for a in answers]
    # one new k: only the new context list is generated
    await generate_answers(
        CASES,
        rankings,
        DOCS,
        [1, 2, 3, 5],
        again,
        existing={k: v for k, v in existing.items() if k != ("q2", ("d3", "d1", "d2"))},
    )
    assert again.calls == [("q2", ("d3", "d1", "d2"))]


async def test_loop_survives_a_failing_generator_and_rejects_unknown_docs() -> None:
    rankings = {"q1": ranking("q1", ["d1"]), "q2": ranking("q2", ["d3"])}
    answers = await generate_answers(CASES, rankings, DOCS, [1], CountingGenerator(fail_on="q2"))
    assert answers[0].error is None
    where = r"\S*test_generate\.py:\d+ in generate"  # the generator's own raise
    assert re.fullmatch(
        rf"generator counting raised RuntimeError: boom \(at {where}\)", answers[1].error or ""
    )
    assert answers[1].text == ""
    with pytest.raises(DataError, match="unknown documents"):
        await generate_answers(
            CASES, {"q1": ranking("q1", ["nope"])}, DOCS, [1], CountingGenerator()
        )


def test_build_generator_names() -> None:
    assert build_generator("extractive").name == "extractive"
    with pytest.raises(ConfigError, match="known generators: extractive, chat"):
        build_generator("abstractive")


def test_extractive_runs_on_the_judges_encoder_by_default() -> None:
    """The default encoder is the offline judges' (``judges``), named in ``version``; a name
    nothing knows is refused when the generator is made, not at its first answer."""
    from ragjudge.embedding import judge_encoder_name, load_judge_encoder

    gen = ExtractiveGenerator()
    assert gen.version == f"v2+{judge_encoder_name()}"
    assert gen.encoder is load_judge_encoder()
    assert ExtractiveGenerator(encoder="plain").version == "v2+plain"
    with pytest.raises(ConfigError, match=r"generator encoder must be one of .*'bert'"):
        ExtractiveGenerator(encoder="bert")


async def test_sweep_generator_encodes_into_the_judges_shared_cache() -> None:
    """In a sweep the generator's vectors come from the judges' shared cache: a sentence it
    encoded is not encoded again when a judge asks for it; the answers and the version are the
    default generator's."""
    from ragjudge.judges.offline.embed import shared_cache
    from ragjudge.sweep.components import build_components
    from ragjudge.sweep.demo import demo_config
    from ragjudge.text import split_sentences

    gen = build_components(demo_config()).generator
    cache = shared_cache()
    before = cache.encoded
    a = await gen.generate(CASES[0], [DOCS[0], DOCS[1]], 2)
    grew = cache.encoded - before
    sentences = [s for d in DOCS[:2] for s in split_sentences(d.text)]
    assert grew == 1 + len(sentences)
    cache.warm([CASES[0].question, *sentences])
    assert cache.encoded == before + grew
    plain = await ExtractiveGenerator().generate(CASES[0], [DOCS[0], DOCS[1]], 2)
    assert a.text == plain.text and gen.version == ExtractiveGenerator().version
