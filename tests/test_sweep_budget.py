"""The budget stops a sweep with LLM judges before it exceeds the calls or the cost, and the
run resumes with a larger budget (real client over HTTP to the local test server)."""

from __future__ import annotations

from ragjudge.judges.registry import JUDGE_NAMES, create_judge
from ragjudge.llm import LLMClient
from ragjudge.store import open_store
from ragjudge.sweep.components import Components
from ragjudge.sweep.run import run_sweep
from tests.test_sweep_run import FirstSentenceGenerator, OverlapRetriever, config, make_testset


def llm_parts() -> Components:
    client = LLMClient.from_env()
    judges = [create_judge(n, "llm", client=client) for n in JUDGE_NAMES]
    return Components(
        OverlapRetriever(), FirstSentenceGenerator(), judges, llm=client, models={"llm": "m"}
    )


def sweep_config(**budget):
    return config(
        judges={"names": list(JUDGE_NAMES), "backend": "llm"}, budget=budget, concurrency=4
    )


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
