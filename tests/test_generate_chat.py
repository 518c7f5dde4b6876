"""The chat generator through the real client against the local test server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragjudge.generate import ChatGenerator, build_generator, generate_answers
from ragjudge.generate.chat import NO_ANSWER, parse_citations
from ragjudge.llm import LLMClient
from ragjudge.schema import Document, Ranking, ScoredDoc, TestCase
from ragjudge.testing.faults import FaultPlan
from ragjudge.testing.server import FakeLLMServer

DOCS = [
    Document(id="d1", text="Boreal Works makes heat pumps. It is based in Osaka."),
    Document(id="d2", text="Aster Labs was founded in 1990 in Lisbon."),
]


@pytest.fixture
def srv() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


def make(srv: FakeLLMServer) -> ChatGenerator:
    client = LLMClient.from_env(
        base_url=srv.base_url, api_key="sk-test", model="fake", max_attempts=1, timeout=5.0
    )
    gen = build_generator("chat", client=client)
    assert isinstance(gen, ChatGenerator)
    return gen


async def test_chat_answer_cites_and_abstains(srv: FakeLLMServer) -> None:
    gen = make(srv)
    case = TestCase(id="q1", question="When was Aster Labs founded?")
    a = await gen.generate(case, DOCS, 2)
    assert a.text == "Aster Labs was founded in 1990 in Lisbon. [2]"
    assert a.citations == [1] and not a.abstained and a.error is None
    assert a.prompt is not None and (a.prompt.name, a.prompt.version) == ("generate/answer", "v1")
    assert a.usage.calls == 1 and a.context_ids == ["d1", "d2"]
    sent = srv.chat_requests()[-1]
    assert sent["template"] == "generate/answer@v1"
    assert '<context id="2">Aster Labs' in sent["body"]["messages"][-1]["content"]
    none = await gen.generate(TestCase(id="q2", question="Who painted the Mona Lisa?"), DOCS, 2)
    assert none.abstained and none.text == NO_ANSWER and none.citations == []


async def test_chat_failure_is_kept_on_the_answer_and_the_loop_goes_on(
    srv: FakeLLMServer,
) -> None:
    gen = make(srv)
    srv.set_faults(FaultPlan.sequence(["500"]))
    cases = [TestCase(id="q1", question="When was Aster Labs founded?")]
    rankings = {"q1": Ranking(query_id="q1", docs=[ScoredDoc(doc_id="d2", score=1.0)])}
    [failed] = await generate_answers(cases, rankings, DOCS, [1], gen)
    assert failed.text == "" and failed.error and failed.error.startswith("provider_error")
    [ok] = await generate_answers(cases, rankings, DOCS, [1], gen)
    assert ok.error is None and ok.citations == [0]


def test_parse_citations_drops_out_of_range() -> None:
    assert parse_citations("a [1] b [3][2] c [9] [0]", 3) == [0, 1, 2]
