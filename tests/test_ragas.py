"""The ragas adapter: ragas 0.4.3 metrics as judges on ragjudge's client, and dataset conversion."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("ragas")

from ragjudge.judges.ragas import from_ragas_dataset, to_ragas_dataset
from ragjudge.judges.registry import create_judge
from ragjudge.llm import LLMClient
from ragjudge.schema import JudgeInput, JudgeStatus
from ragjudge.testing.faults import FaultPlan
from ragjudge.testing.server import FakeLLMServer

ITEM = JudgeInput(
    id="s1",
    question="When and where was Aster Labs founded, and what does it make?",
    answer=(
        "Aster Labs was founded in 1990 in Lisbon. Aster Labs is best known for manufacturing "
        "lidar modules. Aster Labs went public in Frankfurt in 1996."
    ),
    contexts=[
        "Aster Labs was founded in 1990 in Lisbon. It has about 300 employees.",
        "Boreal Works makes heat pumps in Osaka.",
        "Aster Labs is best known for manufacturing lidar modules.",
    ],
    context_ids=["d1", "d2", "d3"],
    reference=(
        "Aster Labs was founded in 1990 in Lisbon. Aster Labs makes lidar modules. "
        "Aster Labs opened a plant near Gdansk in 1997."
    ),
)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def srv(server: FakeLLMServer) -> Iterator[FakeLLMServer]:
    server.reset()
    server.set_faults(None)
    yield server
    server.set_faults(None)


def ragas_judge(name: str, srv: FakeLLMServer, **options: Any) -> Any:
    client = LLMClient.from_env(
        base_url=srv.base_url, api_key="sk-test", model="fake", max_attempts=1, cache=False
    )
    return create_judge(name, "ragas", client=client, **options)


def test_dataset_round_trip() -> None:
    ds = to_ragas_dataset([ITEM, ITEM.model_copy(update={"id": "s2", "reference": None})])
    assert type(ds).__name__ == "EvaluationDataset" and len(ds.samples) == 2
    assert ds.samples[0].user_input == ITEM.question
    assert ds.samples[0].retrieved_contexts == ITEM.contexts
    back = from_ragas_dataset(ds, ids=["s1", "s2"])
    assert back[0] == ITEM and back[1].reference is None and back[1].id == "s2"
    assert [i.id for i in from_ragas_dataset(ds)] == ["ragas-0", "ragas-1"]
    with pytest.raises(ValueError, match="1 ids for 2 samples"):
        from_ragas_dataset(ds, ids=["x"])


async def test_ragas_metrics_run_through_ragjudges_client(srv: FakeLLMServer) -> None:
    faith = await ragas_judge("faithfulness", srv).judge(ITEM)
    assert faith.status == JudgeStatus.ok and faith.backend == "ragas"
    assert faith.score == pytest.approx(2 / 3) and faith.judge_version == "ragas-0.4.3"
    assert faith.usage.calls == 2  # ragas: statements, then verdicts
    recall = await ragas_judge("context_recall", srv).judge(ITEM)
    assert recall.score == pytest.approx(2 / 3) and recall.usage.calls == 1
    precision = await ragas_judge("context_precision", srv).judge(ITEM)
    assert precision.status == JudgeStatus.ok and precision.usage.calls == 3  # one per chunk
    assert precision.score == pytest.approx((1 + 2 / 3) / 2, abs=1e-6)  # relevant: ranks 1, 3
    relevancy = await ragas_judge("answer_relevancy", srv).judge(ITEM)
    assert relevancy.status == JudgeStatus.ok and relevancy.score is not None
    stats = srv.stats()
    assert all(t.startswith("ragas/") for t in stats["by_template"])  # every call is ours
    assert stats["embedding_requests"] == 2  # ResponseRelevancy on the same endpoint


async def test_ragas_nan_and_failures_become_typed(srv: FakeLLMServer) -> None:
    no_ref = await ragas_judge("context_recall", srv).judge(
        ITEM.model_copy(update={"reference": None})
    )
    assert no_ref.status == JudgeStatus.skipped_missing_reference
    assert srv.stats()["chat_requests"] == 0
    empty = await ragas_judge("faithfulness", srv).judge(ITEM.model_copy(update={"answer": ""}))
    assert (
        empty.status == JudgeStatus.no_claims
        and empty.score is None
        and "NaN" in (empty.error or "")
    )
    srv.set_faults(FaultPlan(rates={"500": 1.0}))
    srv.reset()
    failed = await ragas_judge("faithfulness", srv).judge(ITEM)
    assert failed.status == JudgeStatus.provider_error and failed.score is None
    assert srv.stats()["chat_requests"] == 1  # ragas does not retry on top of the client
    srv.set_faults(FaultPlan(rates={"malformed": 1.0}))
    garbled = await ragas_judge("context_recall", srv).judge(ITEM)
    assert garbled.status == JudgeStatus.parse_error and garbled.score is None
