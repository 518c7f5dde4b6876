"""The local OpenAI-compatible test server, exercised with the real openai SDK over HTTP."""

from __future__ import annotations

import base64
import contextlib
import json
import math
import struct
from pathlib import Path

import openai
import pytest

from ragjudge.llm import TEMPLATE_HEADER
from ragjudge.testing.faults import FaultPlan
from ragjudge.testing.server import FakeLLMServer


def sdk(server: FakeLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-x", max_retries=0)


def test_models_embeddings_and_stats(fake_llm: FakeLLMServer) -> None:
    client = sdk(fake_llm)
    assert [m.id for m in client.models.list().data] == ["fake-model"]
    emb = client.embeddings.create(model="e", input=["the cat sat", "the cat sat", "dogs bark"])
    a, b, c = (d.embedding for d in emb.data)
    assert len(a) == 384 and a == b and a != c
    assert math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-6)
    b64 = client.embeddings.create(model="e", input="the cat sat", encoding_format="base64")
    raw = base64.b64decode(str(b64.data[0].embedding))
    assert list(struct.unpack("<384f", raw)) == pytest.approx(a, abs=1e-6)
    stats = fake_llm.stats()
    assert stats["embedding_requests"] == 2 and stats["chat_requests"] == 0


def test_chat_with_n_usage_and_log_file(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with FakeLLMServer(log_path=log) as server:
        resp = sdk(server).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "three little words"}],
            n=2,
            extra_headers={TEMPLATE_HEADER: "test/echo@v1"},
        )
    assert [c.message.content for c in resp.choices] == ["three little words"] * 2
    assert resp.usage is not None and resp.usage.prompt_tokens > 0
    (line,) = log.read_text().splitlines()
    rec = json.loads(line)
    assert rec["template"] == "test/echo@v1" and rec["status"] == 200 and rec["body"]["n"] == 2


def test_unknown_template_is_a_400_naming_it_or_generic(fake_llm: FakeLLMServer) -> None:
    client = sdk(fake_llm)
    with pytest.raises(openai.BadRequestError, match="my/template@v3"):
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "x"}],
            extra_headers={TEMPLATE_HEADER: "my/template@v3"},
        )
    fake_llm.unknown = "generic"
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "y"]}},
        "required": ["a", "b"],
    }
    resp = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "x"}],
        response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": schema}},
    )
    assert json.loads(resp.choices[0].message.content or "") == {"a": 0, "b": "x"}


def test_fault_plan_is_deterministic_and_logged(fake_llm: FakeLLMServer) -> None:
    plan = FaultPlan(rates={"500": 0.3, "429": 0.2}, seed=7)
    expected = [plan.decide(i) for i in range(30)]
    assert 0 < sum(f is not None for f in expected) < 30
    fake_llm.set_faults(plan)
    client = sdk(fake_llm)
    for _ in range(30):
        with contextlib.suppress(openai.APIStatusError):
            client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": "x"}],
                extra_headers={TEMPLATE_HEADER: "test/echo@v1"},
            )
    assert [r["fault"] for r in fake_llm.chat_requests()] == expected
    assert fake_llm.stats()["faults"] == {
        k: expected.count(k) for k in ("500", "429") if expected.count(k)
    }


def test_forced_tool_call_is_answered_through_the_tool(fake_llm: FakeLLMServer) -> None:
    tool = {"type": "function", "function": {"name": "out", "parameters": {"type": "object"}}}
    resp = sdk(fake_llm).chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "{}"}],
        tools=[tool],  # type: ignore[list-item]
        tool_choice={"type": "function", "function": {"name": "out"}},
        extra_headers={TEMPLATE_HEADER: "test/json@v1"},
    )
    call = (resp.choices[0].message.tool_calls or [])[0]
    assert call.function.name == "out" and call.function.arguments == "{}"  # type: ignore[union-attr]


def test_ragas_prompts_parse_into_ragas_models(fake_llm: FakeLLMServer) -> None:
    pytest.importorskip("ragas")
    from ragas.metrics._answer_relevance import (
        ResponseRelevanceInput,
        ResponseRelevanceOutput,
        ResponseRelevancePrompt,
    )
    from ragas.metrics._context_precision import QAC, ContextPrecisionPrompt, Verification
    from ragas.metrics._context_recall import (
        QCA,
        ContextRecallClassificationPrompt,
        ContextRecallClassifications,
    )
    from ragas.metrics._faithfulness import (
        NLIStatementInput,
        NLIStatementOutput,
        NLIStatementPrompt,
        StatementGeneratorInput,
        StatementGeneratorOutput,
        StatementGeneratorPrompt,
    )

    context = "Marie Curie won the Nobel Prize in Physics in 1903. She was born in Warsaw."
    answer = "Marie Curie won the Nobel Prize in Physics. She liked cheese."
    cases = [
        (
            StatementGeneratorPrompt(),
            StatementGeneratorInput(question="q?", answer=answer),
            StatementGeneratorOutput,
        ),
        (
            NLIStatementPrompt(),
            NLIStatementInput(context=context, statements=answer.split(". ")),
            NLIStatementOutput,
        ),
        (
            ResponseRelevancePrompt(),
            ResponseRelevanceInput(response=answer),
            ResponseRelevanceOutput,
        ),
        (
            ContextRecallClassificationPrompt(),
            QCA(question="q", context=context, answer=answer),
            ContextRecallClassifications,
        ),
        (ContextPrecisionPrompt(), QAC(question="q", context=context, answer=answer), Verification),
    ]
    client = sdk(fake_llm)
    out = []
    for prompt, data, model in cases:
        resp = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": prompt.to_string(data)}]
        )
        out.append(model.model_validate_json(resp.choices[0].message.content or ""))
    assert out[0].statements == ["Marie Curie won the Nobel Prize in Physics.", "She liked cheese."]
    assert [s.verdict for s in out[1].statements] == [1, 0]
    assert out[2].noncommittal == 0 and out[2].question.endswith("?")
    assert [c.attributed for c in out[3].classifications] == [1, 0]
    assert out[4].verdict == 1
    labels = [r["responder"] for r in fake_llm.chat_requests()]
    assert labels == [
        "ragas/faithfulness.statements",
        "ragas/faithfulness.nli",
        "ragas/answer_relevancy.question",
        "ragas/context_recall.classify",
        "ragas/context_precision.verdict",
    ]


async def test_async_context_manager_serves_on_the_running_loop() -> None:
    async with FakeLLMServer() as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-x", max_retries=0)
        resp = await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={TEMPLATE_HEADER: "test/echo@v1"},
        )
        await client.close()
    assert resp.choices[0].message.content == "hi"
