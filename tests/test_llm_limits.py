"""Limits: one precedence everywhere (flag or argument > ``RAGJUDGE_*`` environment >
default); an unset ``--concurrency`` / ``concurrency=`` never overrides
``RAGJUDGE_MAX_CONCURRENCY``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragjudge.api.evaluate import evaluate
from ragjudge.judges.registry import build_judges, create_judge
from ragjudge.llm import LLMClient
from ragjudge.store import open_store
from ragjudge.sweep.components import Components
from ragjudge.sweep.run import run_sweep
from ragjudge.testing.faults import FaultPlan
from ragjudge.testing.server import FakeLLMServer
from tests.test_sweep_run import FirstSentenceGenerator, OverlapRetriever, config, make_testset


def _rows(tag: str, n: int = 8) -> list[dict[str, object]]:
    return [
        {
            "id": f"{tag}{i}",
            "question": f"What is {tag} item {i}?",
            "answer": f"Item {i} of {tag} is a lamp.",
            "contexts": [f"Item {i} of {tag} is a lamp."],
        }
        for i in range(n)
    ]


def test_unset_concurrency_never_overrides_the_environment(
    llm_env: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_env.latency = 0.15
    monkeypatch.setenv("RAGJUDGE_MAX_CONCURRENCY", "2")
    (judge,) = build_judges(["answer_relevancy"], "llm")
    assert judge.client.settings.max_concurrency == 2  # type: ignore[attr-defined]
    evaluate(_rows("a"), ["answer_relevancy"], backend="llm")
    assert llm_env.stats()["max_in_flight"] == 2
    llm_env.reset()
    evaluate(_rows("b"), ["answer_relevancy"], backend="llm", concurrency=4)
    assert llm_env.stats()["max_in_flight"] == 4


def test_answered_counts_every_call_a_reply_arrived_for(
    llm_env: FakeLLMServer, tmp_path: Path
) -> None:
    """A reply that failed to parse was still answered (it used to be left out)."""
    llm_env.set_faults(FaultPlan.sequence(["malformed", "malformed"]))
    client = LLMClient.from_env(max_concurrency=1)
    judges = [create_judge("faithfulness", "llm", client=client)]
    comp = Components(OverlapRetriever(), FirstSentenceGenerator(), judges, llm=client)
    cfg = config(judges={"names": ["faithfulness"], "backend": "llm"}, ks=[1, 2], concurrency=1)
    out = run_sweep(
        cfg, store=open_store(tmp_path / "r.sqlite"), components=comp, testset=make_testset()
    )
    statuses = [r.result.status.value for r in out_rows(out, tmp_path)]
    assert "parse_error" in statuses and out.status == "finished"
    assert out.llm_calls > 0 and out.llm_answered == out.llm_calls


def out_rows(out: Any, tmp_path: Path) -> list[Any]:
    return open_store(tmp_path / "r.sqlite").judge_results(out.run_id)
