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


def test_a_killed_sweep_left_its_requests_in_flight_in_the_ledger_and_resumes(
    tmp_path: Path,
) -> None:
    """``kill -9`` while requests wait for their answers: every request the server received is
    in the run's ledger (as sent, unanswered), and the same command resumes and finishes."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from ragjudge.resources import demo_dir

    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(
        f"dataset: {{path: {demo_dir()}, split: test, sample: 8}}\n"
        "retriever: {kind: bm25}\ngenerator: {kind: extractive}\n"
        "judges: {names: [answer_relevancy], backend: llm}\nks: [1]\n"
    )
    with FakeLLMServer(latency=1.5) as srv:
        env = dict(
            os.environ,
            OPENAI_BASE_URL=srv.base_url,
            OPENAI_API_KEY="sk-x",
            RAGJUDGE_MODEL="m",
            RAGJUDGE_HOME=str(tmp_path / "home"),
            RAGJUDGE_MAX_CONCURRENCY="4",
        )
        cmd = [
            sys.executable,
            "-m",
            "ragjudge",
            "sweep",
            "--config",
            str(cfg),
            "--out",
            str(tmp_path),
        ]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while srv.stats()["max_in_flight"] < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        time.sleep(2.0)  # the server finishes (and logs) what it was answering
        seen = srv.stats()["chat_requests"]
        store = open_store(tmp_path / "home" / "runs.sqlite")
        (run,) = store.list_runs()
        ledger = store.ledger(run.run_id)
        sent = sum(e.kind == "sent" and "preflight" not in e.tags for e in ledger)
        answered = sum(e.kind == "attempt" for e in ledger)
        assert seen >= 4 and sent == seen and answered < sent
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    (run,) = open_store(tmp_path / "home" / "runs.sqlite").list_runs()
    assert run.status == "finished"


def test_judge_writes_its_ledger(llm_env: FakeLLMServer, tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    from ragjudge.llm import Ledger

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _rows("l", 3)))
    path = tmp_path / "sub" / "ledger.jsonl"
    cmd = [sys.executable, "-m", "ragjudge", "judge", "--input", str(rows)]
    cmd += ["--judges", "answer_relevancy", "--ledger", str(path), "--no-progress"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert res.returncode == 0, res.stderr
    entries = Ledger.read_jsonl(path)
    calls = [e for e in entries if e.kind == "call" and "preflight" not in e.tags]
    assert len(calls) == 3 and all(e.tags["judge"] == "answer_relevancy" for e in calls)
    assert sum(e.kind == "attempt" for e in entries) == llm_env.stats()["chat_requests"] + 1
