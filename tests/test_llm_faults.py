"""Retries, timeouts and dropped connections, over real HTTP against the fault plan."""

from __future__ import annotations

import time

import pytest
from pydantic import BaseModel

from ragjudge.llm import LLMClient
from ragjudge.llm.limiter import limiter_for
from ragjudge.schema import PromptRef
from ragjudge.testing.faults import FaultPlan
from ragjudge.testing.server import FakeLLMServer

SUM = PromptRef(name="test/sum", version="v1")


class Sum(BaseModel):
    numbers: list[int]
    total: int


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def test_429_retried_after_retry_after(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan(script={0: "429", 1: "429"}, retry_after=0.3))
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("1 2"), Sum, prompt=SUM)
    assert res.ok and res.attempts == 3
    t = [r["t"] for r in llm_env.chat_requests()]
    # back-off is 0.01 s in the fixture, so these gaps come from Retry-After
    assert t[1] - t[0] >= 0.28 and t[2] - t[1] >= 0.28
    attempts = client.ledger.attempts()
    assert [a.status for a in attempts] == [429, 429, 200]
    assert [a.error_kind for a in attempts] == ["rate_limited", "rate_limited", None]
    assert client.ledger.calls()[0].attempts == 3


async def test_500_and_dropped_connection_and_bad_body_are_retried(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan.sequence(["500", "drop", "bad_body", "503"]))
    async with LLMClient.from_env() as client:
        res = await client.structured(ask("2 2"), Sum, prompt=SUM)
    assert res.ok and res.value is not None and res.value.total == 4
    assert res.attempts == 5
    assert [r["status"] for r in llm_env.chat_requests()] == [500, "dropped", 200, 503, 200]


async def test_hang_past_timeout_is_retried(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan.sequence(["hang"], hang_seconds=10))
    started = time.perf_counter()
    async with LLMClient.from_env(timeout=0.3) as client:
        res = await client.structured(ask("1 1"), Sum, prompt=SUM)
    assert res.ok and res.attempts == 2
    assert time.perf_counter() - started < 5
    assert client.ledger.attempts()[0].error_kind == "timeout"


async def test_persistent_hang_is_a_timeout_error(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan(rates={"hang": 1.0}, hang_seconds=10))
    async with LLMClient.from_env(timeout=0.2, max_attempts=2) as client:
        res = await client.chat(ask("x"), prompt=SUM)
    assert res.error is not None and res.error.kind == "timeout"
    assert "RAGJUDGE_TIMEOUT" in res.error.message and "2 attempts" in res.error.message
    assert res.value is None and res.attempts == 2


async def test_attempts_are_bounded_and_error_is_typed(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan(rates={"429": 1.0}, retry_after=0.01))
    async with LLMClient.from_env(max_attempts=3) as client:
        res = await client.structured(ask("1"), Sum, prompt=SUM)
    assert res.error is not None and res.error.kind == "rate_limited"
    assert len(llm_env.chat_requests()) == 3 and res.attempts == 3
    assert client.ledger.summary(by=())[0]["failed_attempts"] == 3
    assert client.cache is not None and len(client.cache) == 0  # failures are not cached


async def test_concurrency_never_exceeds_the_cap(llm_env: FakeLLMServer) -> None:
    import asyncio

    llm_env.latency = 0.05
    async with LLMClient.from_env(max_concurrency=4) as client:
        results = await asyncio.gather(
            *(client.structured(ask(f"{i} 1"), Sum, prompt=SUM) for i in range(24))
        )
    assert all(r.ok for r in results)
    assert [r.value.total for r in results if r.value] == [i + 1 for i in range(24)]
    assert llm_env.stats()["max_in_flight"] == 4


async def test_429s_shrink_the_adaptive_limit(llm_env: FakeLLMServer) -> None:
    import asyncio

    llm_env.latency = 0.02
    llm_env.set_faults(FaultPlan(rates={"429": 0.5}, retry_after=0.01, seed=3))
    async with LLMClient.from_env(max_concurrency=8, max_attempts=12) as client:
        results = await asyncio.gather(
            *(client.structured(ask(f"{i}"), Sum, prompt=SUM) for i in range(40))
        )
        lim = limiter_for(client.endpoint, 8)
    assert all(r.ok for r in results)
    assert lim.decreases >= 1 and lim.limit < 8


async def test_timeouts_shrink_the_adaptive_limit_as_429s_do(llm_env: FakeLLMServer) -> None:
    import asyncio

    llm_env.set_faults(FaultPlan(rates={"hang": 0.5}, hang_seconds=0.6, seed=3))
    async with LLMClient.from_env(max_concurrency=8, max_attempts=12, timeout=0.2) as client:
        results = await asyncio.gather(
            *(client.structured(ask(f"{i}"), Sum, prompt=SUM) for i in range(40))
        )
        lim = limiter_for(client.endpoint, 8)
    assert all(r.ok for r in results)
    assert lim.decreases >= 1 and lim.limit < 8


@pytest.mark.parametrize("spec", ["429=0.2,malformed=0.05", "500=1"])
def test_fault_plan_parse(spec: str) -> None:
    plan = FaultPlan.parse(spec, seed=1)
    assert sum(plan.rates.values()) == pytest.approx(
        sum(float(x.split("=")[1]) for x in spec.split(","))
    )
    assert [plan.decide(i) for i in range(50)] == [plan.decide(i) for i in range(50)]


async def test_limiter_tolerates_a_trickle_of_429s_but_shrinks_on_sustained_overload() -> None:
    from ragjudge.llm.limiter import AdaptiveLimiter

    lim = AdaptiveLimiter(16)
    for i in range(400):  # one response in ten is a 429
        await lim.acquire()
        await lim.release(overloaded=i % 10 == 0, ok=i % 10 != 0)
    assert lim.current == 16 and lim.decreases == 0
    for _ in range(400):  # every response a 429
        await lim.acquire()
        await lim.release(overloaded=True, ok=False)
    assert lim.current <= 2 and lim.decreases >= 5
    for _ in range(200):  # recovery, about +1 per window
        await lim.acquire()
        await lim.release()
    assert lim.current > 10


async def test_the_attempt_timeout_starts_when_the_request_is_sent_not_queued(
    llm_env: FakeLLMServer,
) -> None:
    """Issue #29: the per-attempt timeout counted the time a request waited its turn. One
    request at a time, 0.3 s each, a 0.5 s timeout, one attempt: the fourth request waits
    about 0.9 s for its turn and still succeeds."""
    import asyncio

    llm_env.latency = 0.3
    async with LLMClient.from_env(
        max_concurrency=1, adaptive=False, timeout=0.5, max_attempts=1
    ) as client:
        started = time.perf_counter()
        results = await asyncio.gather(
            *(client.structured(ask(f"{i} 1"), Sum, prompt=SUM) for i in range(4))
        )
        elapsed = time.perf_counter() - started
    assert all(r.ok for r in results), [r.error for r in results]
    assert elapsed > 1.1  # they really queued: 4 x 0.3 s one at a time
    assert llm_env.stats()["max_in_flight"] == 1
