"""Ledger counts, cost from the price table, grouping by tags, the dry run, and identical
concurrent calls sharing one request."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from pydantic import BaseModel

from ragjudge.errors import ConfigError, DataError
from ragjudge.llm import Ledger, LedgerEntry, LLMClient, PriceTable, dry_run, estimate_tokens
from ragjudge.llm.ledger import Price
from ragjudge.schema import PromptRef
from ragjudge.testing.faults import FaultPlan
from ragjudge.testing.server import FakeLLMServer

SUM = PromptRef(name="test/sum", version="v1")


class Sum(BaseModel):
    numbers: list[int]
    total: int


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


async def test_ledger_counts_calls_attempts_tokens_and_cost(llm_env: FakeLLMServer) -> None:
    prices = PriceTable(prices={"fake-model": Price(input=1.0, output=2.0)})
    seen: list[LedgerEntry] = []
    ledger = Ledger(prices, on_entry=seen.append)
    # request 1 is a 429 (retried), request 3 malformed (repaired)
    llm_env.set_faults(FaultPlan(script={1: "429", 3: "malformed"}, retry_after=0.01))
    async with LLMClient.from_env(ledger=ledger) as client:
        for k in (1, 2, 3):
            await client.structured(ask(f"{k} 10"), Sum, prompt=SUM, tags={"judge": "sum", "k": k})
        await client.structured(ask("1 10"), Sum, prompt=SUM, tags={"judge": "sum", "k": 1})
    server_p = sum(r["prompt_tokens"] for r in llm_env.chat_requests() if r["status"] == 200)
    server_c = sum(r["completion_tokens"] for r in llm_env.chat_requests() if r["status"] == 200)
    total = ledger.total()
    assert (total.prompt_tokens, total.completion_tokens) == (server_p, server_c)
    assert total.calls == 4  # three calls + one repair call; the fourth call was a cache hit
    assert total.cached_calls == 1
    assert total.cost_usd == pytest.approx((server_p * 1.0 + server_c * 2.0) / 1e6)
    rows = {r["k"]: r for r in ledger.summary(by=("judge", "k"))}
    assert [rows[k]["attempts"] for k in ("1", "2", "3")] == [1, 2, 2]
    assert rows["2"]["failed_attempts"] == 1 and rows["3"]["repairs"] == 1
    assert rows["1"]["calls"] == 2 and rows["1"]["cached"] == 1
    kinds = Counter(e.kind for e in ledger.entries)
    assert len(seen) == len(ledger.entries)
    assert kinds == {"call": 4, "attempt": 5, "sent": 5}  # each attempt recorded as sent too
    assert all(r["unanswered"] == 0 for r in rows.values())
    assert ledger.total(k=2).calls == 1


async def test_identical_concurrent_calls_share_one_request(llm_env: FakeLLMServer) -> None:
    llm_env.latency = 0.1
    async with LLMClient.from_env() as client:
        results = await asyncio.gather(
            *(client.structured(ask("7 8"), Sum, prompt=SUM) for _ in range(5))
        )
    assert len(llm_env.chat_requests()) == 1
    assert all(r.ok and r.value == Sum(numbers=[7, 8], total=15) for r in results)
    assert sum(not r.cached for r in results) == 1
    assert client.ledger.total().calls == 1 and client.ledger.total().cached_calls == 4


def test_ledger_jsonl_roundtrip(tmp_path: Path) -> None:
    ledger = Ledger()
    ledger.record(LedgerEntry(kind="call", call_id="a", tags={"run": "r1"}, prompt_tokens=5))
    ledger.to_jsonl(tmp_path / "l.jsonl")
    assert Ledger.read_jsonl(tmp_path / "l.jsonl") == ledger.entries


def test_a_bad_ledger_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    good = LedgerEntry(kind="call", call_id="a", prompt_tokens=5).model_dump_json()
    bad = good.replace('"prompt_tokens":5', '"prompt_tokens":"five"')
    path.write_text(good + "\n\n" + bad + "\n")
    with pytest.raises(DataError, match=r"l\.jsonl:3: not a ledger entry \(prompt_tokens: "):
        Ledger.read_jsonl(path)


def test_price_table_prefix_and_file(tmp_path: Path) -> None:
    table = PriceTable()
    assert table.cost("gpt-4o-mini-2024-07-18", 1_000_000, 0) == pytest.approx(0.15)
    assert table.cost("llama3:8b", 10**6, 10**6) == 0.0 and table.price("llama3:8b") is None
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"llama3:8b": {"input": 0.1, "output": 0.2}}))
    assert PriceTable.from_file(path).cost("llama3:8b", 10**6, 10**6) == pytest.approx(0.3)
    path.write_text("{not json")
    with pytest.raises(ConfigError, match=r"prices\.json"):
        PriceTable.from_file(path)
    yaml_path = tmp_path / "prices.yaml"
    yaml_path.write_text("llama3:8b: {input: 0.1, output: 0.2}\n")
    assert PriceTable.from_file(yaml_path).cost("llama3:8b", 10**6, 0) == pytest.approx(0.1)
    yaml_path.write_text("m: {input: 1, output: 1}\nm: {input: 2, output: 2}\n")
    with pytest.raises(ConfigError, match=r"prices\.yaml:2: duplicate key 'm'"):
        PriceTable.from_file(yaml_path)


def test_estimate_tokens_and_dry_run() -> None:
    msgs = [{"role": "system", "content": "x" * 40}, {"role": "user", "content": "y" * 400}]
    assert estimate_tokens(msgs) == 3 + (3 + 10) + (3 + 100)
    plan = [msgs] * 10
    est = dry_run(plan, PriceTable(), model="gpt-4o", completion_tokens=100, context_window=150)
    assert est.calls == 10 and est.prompt_tokens == 10 * 119 and est.completion_tokens == 1000
    assert est.cost_usd == pytest.approx((1190 * 2.5 + 1000 * 10.0) / 1e6)
    assert est.priced and est.over_context == 10 and est.max_prompt_tokens == 119
