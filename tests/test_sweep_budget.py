"""The budget stops a sweep with LLM judges before it exceeds the calls or the cost, and the
run resumes with a larger budget (real client over HTTP to the local test server)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from ragjudge.errors import ConfigError
from ragjudge.judges.registry import JUDGE_NAMES, create_judge
from ragjudge.llm import LLMClient
from ragjudge.store import open_store
from ragjudge.sweep.components import Components
from ragjudge.sweep.run import run_sweep
from tests.test_sweep_run import FirstSentenceGenerator, OverlapRetriever, config, make_testset


def llm_parts(names: Sequence[str] = JUDGE_NAMES) -> Components:
    client = LLMClient.from_env()
    judges = [create_judge(n, "llm", client=client) for n in names]
    return Components(
        OverlapRetriever(), FirstSentenceGenerator(), judges, llm=client, models={"llm": "m"}
    )


def sweep_config(names: Sequence[str] = JUDGE_NAMES, **budget):
    return config(judges={"names": list(names), "backend": "llm"}, budget=budget, concurrency=4)


def test_call_budget_stops_cleanly_and_resumes(llm_env, monkeypatch, tmp_path):
    store = open_store(tmp_path / "runs.sqlite")
    full = run_sweep(
        sweep_config(),
        store=open_store(tmp_path / "ref.sqlite"),
        components=llm_parts(),
        testset=make_testset(),
    )
    needed = len(llm_env.chat_requests())
    assert full.llm_calls == needed > 30

    llm_env.reset()
    monkeypatch.setenv("RAGJUDGE_HOME", str(tmp_path / "cold"))  # a cold LLM cache
    limit = needed // 2
    out = run_sweep(
        sweep_config(max_calls=limit), store=store, components=llm_parts(), testset=make_testset()
    )
    assert out.status == "stopped_budget"
    sent = len(llm_env.chat_requests())
    assert sent <= limit  # never past the limit
    assert sent >= limit - 4  # and stopped close to it (at most the slots in flight)
    assert store.manifest(out.run_id).status == "stopped_budget"
    # the report covers what was judged, with coverage below 1
    faith = out.summary.table("judge")["faithfulness"]
    assert min(a.n_scored for a in faith.values()) < 7
    # the objective's coverage is out of every case, not of the cases that have it (it showed
    # 1/1 for a k judged on one case of seven)
    objective = out.summary.table("objective")["objective"]
    n_cases = len(make_testset().cases)
    assert all(a.n_total == n_cases for a in objective.values())
    assert min(a.n_scored for a in objective.values()) < n_cases

    # the same command with a larger budget resumes the run and finishes it, paying only the rest
    llm_env.reset()
    done = run_sweep(
        sweep_config(max_calls=needed), store=store, components=llm_parts(), testset=make_testset()
    )
    assert done.resumed and done.run_id == out.run_id and done.status == "finished"
    assert done.counts["judge_results"] == full.counts["judge_results"]
    assert sent + len(llm_env.chat_requests()) == needed


def test_cost_budget(llm_env, monkeypatch, tmp_path):
    monkeypatch.setenv("RAGJUDGE_MODEL", "gpt-4o-mini")  # a priced model: cost is not zero
    ref = run_sweep(
        sweep_config(),
        store=open_store(tmp_path / "ref.sqlite"),
        components=llm_parts(),
        testset=make_testset(),
    )
    total = sum(
        r.result.usage.cost_usd
        for r in open_store(tmp_path / "ref.sqlite").judge_results(ref.run_id)
    )
    assert total > 0
    monkeypatch.setenv("RAGJUDGE_HOME", str(tmp_path / "cold"))
    store = open_store(tmp_path / "runs.sqlite")
    out = run_sweep(
        sweep_config(max_cost_usd=total / 3),
        store=store,
        components=llm_parts(),
        testset=make_testset(),
    )
    assert out.status == "stopped_budget"
    spent = sum(r.result.usage.cost_usd for r in store.judge_results(out.run_id))
    assert 0 < spent <= total / 3
    # a model with no price: its calls would count as free, the limit never stopping the run
    # (it ran to the end in silence); refused before anything is sent
    monkeypatch.setenv("RAGJUDGE_MODEL", "a-local-model")
    sent = len(llm_env.chat_requests())
    with pytest.raises(ConfigError, match=r"budget\.max_cost_usd: no price is known for model"):
        run_sweep(
            sweep_config(max_cost_usd=0.01),
            store=store,
            components=llm_parts(),
            testset=make_testset(),
            new=True,
        )
    assert len(llm_env.chat_requests()) == sent


PER_K = ["faithfulness", "answer_relevancy", "completeness"]  # judged at every k


@pytest.mark.parametrize("share", [0.3, 0.5, 0.7])
def test_calls_in_flight_at_a_budget_stop_are_kept_not_paid_again(
    llm_env, monkeypatch, tmp_path, share
):
    """When the budget stops a step, the calls already sent finish and are stored: the stopped
    run and its resumption send exactly the calls of an uninterrupted run (the stop cancelled
    them once, and the resumed run sent them again)."""

    def sweep(store_name: str, **budget):
        return run_sweep(
            sweep_config(PER_K, **budget),
            store=open_store(tmp_path / store_name),
            components=llm_parts(PER_K),
            testset=make_testset(),
        )

    sweep("ref.sqlite")
    needed = len(llm_env.chat_requests())
    llm_env.reset()
    llm_env.latency = 0.05  # replies take a while: calls are in flight when the budget stops
    monkeypatch.setenv("RAGJUDGE_HOME", str(tmp_path / "cold"))  # a cold LLM cache
    limit = int(needed * share)
    out = sweep("runs.sqlite", max_calls=limit)
    sent = len(llm_env.chat_requests())
    assert out.status == "stopped_budget" and sent <= limit
    llm_env.reset()
    done = sweep("runs.sqlite", max_calls=needed)
    assert done.resumed and done.status == "finished"
    assert sent + len(llm_env.chat_requests()) == needed
