"""No run that fails quietly, and bounded work on hostile input (issue 15 §3, §4): each case
below failed (or passed silently) before its fix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ragjudge.cli import main
from ragjudge.errors import ConfigError, DataError
from ragjudge.judges.registry import JUDGE_NAMES, create_judge
from ragjudge.llm import LLMClient
from ragjudge.schema import Ranking, RunManifest, TestSet
from ragjudge.store import open_store
from ragjudge.sweep.components import Components
from ragjudge.sweep.config import load_config
from ragjudge.sweep.data import check_ks
from ragjudge.sweep.run import run_sweep
from ragjudge.sweep.stages import StageFailedError
from tests.test_sweep_run import (
    FirstSentenceGenerator,
    OverlapRetriever,
    config,
    make_testset,
    parts,
)

SECRET = "pw-in-the-url-7f3a"


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    cap = capsys.readouterr()
    return int(exc.value.code or 0), cap.out + cap.err


def demo_config(tmp_path: Path, body: str) -> Path:
    from ragjudge.resources import demo_dir

    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(f"dataset: {{path: {demo_dir()}, split: test, limit: 3}}\n{body}")
    return cfg


# ---------------------------------------------------------------- a stage whose calls all fail


def test_chat_generation_against_a_closed_port_fails_the_run_naming_the_root_error(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://user:{SECRET}@127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.setenv("RAGJUDGE_MODEL", "m")
    monkeypatch.setenv("RAGJUDGE_MAX_ATTEMPTS", "1")
    cfg = demo_config(
        tmp_path,
        "retriever: {kind: bm25}\ngenerator: {kind: chat}\n"
        "judges: {names: [faithfulness], backend: offline}\nks: [1, 2]\n",
    )
    code, text = run_cli(["sweep", "-c", str(cfg), "--out", str(tmp_path / "o")], capsys)
    line = " ".join(text.split())
    assert code == 2, text
    # found by the pre-flight call, before any answer was asked for
    assert "pre-flight call to model 'm' at http://***@127.0.0.1:9/v1 failed" in line
    assert "cannot reach the LLM endpoint http://***@127.0.0.1:9/v1" in line
    assert "empty answer" not in line and "finished" not in line and SECRET not in text
    store = open_store()
    (run,) = store.list_runs()
    assert run.status == "failed" and store.counts(run.run_id)["judge_results"] == 0
    assert SECRET not in Path(store.location).read_bytes().decode("latin-1")


def test_a_skipped_row_does_not_hide_judges_whose_every_call_failed(llm_env, tmp_path):
    """A failing server (the pre-flight call passes, every judge call gets a 500); the case
    without a reference is skipped by the reference-needing judge, which used to turn 'every
    call failed' into exit 0."""
    from ragjudge.testing.faults import FaultPlan

    llm_env.set_faults(FaultPlan(rates={"500": 1.0}))
    client = LLMClient.from_env(max_attempts=2)
    judges = [create_judge(n, "llm", client=client) for n in ("faithfulness", "context_recall")]
    comp = Components(OverlapRetriever(), FirstSentenceGenerator(), judges, llm=client)
    cfg = config(judges={"names": ["faithfulness", "context_recall"], "backend": "llm"}, ks=[1, 2])
    store = open_store(tmp_path / "runs.sqlite")
    with pytest.raises(StageFailedError) as exc:
        run_sweep(cfg, store=store, components=comp, testset=make_testset())
    msg = str(exc.value)
    assert "faithfulness scored 0/" in msg and "context_recall scored 0/" in msg
    assert "provider_error x" in msg and "(500:" in msg and "stored as failed" in msg
    (run,) = store.list_runs()
    assert run.status == "failed"
    statuses = {r.result.status.value for r in store.judge_results(run.run_id)}
    assert "skipped_missing_reference" in statuses


def test_an_llm_reranker_whose_every_call_fails_fails_the_run(tmp_path, monkeypatch):
    from ragjudge.retrieval import Pipeline
    from ragjudge.retrieval.rerank.llm import LLMListwiseReranker

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAGJUDGE_MAX_ATTEMPTS", "1")
    reranker = LLMListwiseReranker(client=LLMClient.from_env(), window=4, step=2)
    comp = parts()
    comp.retriever = Pipeline(OverlapRetriever(), stages=[(reranker, 4)])
    store = open_store(tmp_path / "runs.sqlite")
    with pytest.raises(StageFailedError, match="reranking failed: every one of 7 calls") as exc:
        run_sweep(config(), store=store, components=comp, testset=make_testset())
    assert "cannot reach the LLM endpoint" in str(exc.value)
    (run,) = store.list_runs()
    assert run.status == "failed" and store.rankings(run.run_id) == {}


# ---------------------------------------------------------------- killed, partial, short runs


def test_a_run_killed_with_sigkill_reads_as_interrupted(tmp_path, capsys):
    store = open_store()
    m = RunManifest(
        run_id="r-1",
        dataset_name="d",
        dataset_hash="h",
        config_hash="c",
        config={},
        ragjudge_version="0",
        started_at="2026-01-01T00:00:00+00:00",
    )
    store.create_run(m)
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom ragjudge.store import RunLock\n"
        "RunLock(Path(sys.argv[1]), 'r-1').acquire()\nprint('locked', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, store.location], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        assert store.manifest("r-1").status == "running"  # its writer is alive
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert store.manifest("r-1").status == "interrupted"
    code_, text = run_cli(["runs", "list"], capsys)
    assert code_ == 0 and "interrupted" in text


def test_a_budget_stopped_run_chooses_no_k_and_counts_calls_that_arrived(
    llm_env, tmp_path, monkeypatch
):
    def llm_parts() -> Components:
        client = LLMClient.from_env()
        judges = [create_judge(n, "llm", client=client) for n in JUDGE_NAMES]
        return Components(OverlapRetriever(), FirstSentenceGenerator(), judges, llm=client)

    cfg = config(judges={"names": list(JUDGE_NAMES), "backend": "llm"}, ks=[1, 2, 3])
    full = run_sweep(
        cfg, store=open_store(tmp_path / "a.sqlite"), components=llm_parts(), testset=make_testset()
    )
    assert full.summary.choice.best_k is not None
    assert full.llm_answered == full.llm_calls == len(llm_env.chat_requests())
    monkeypatch.setenv("RAGJUDGE_HOME", str(tmp_path / "cold"))  # a cold LLM cache
    stopped = cfg.model_copy(update={"budget": cfg.budget.model_copy(update={"max_calls": 20})})
    out = run_sweep(
        stopped,
        store=open_store(tmp_path / "b.sqlite"),
        components=llm_parts(),
        testset=make_testset(),
    )
    assert out.status == "stopped_budget"
    choice = out.summary.choice
    assert choice.best_k is None and choice.within_noise == []
    assert "the run is stopped_budget" in (choice.reason or "")


def test_a_retriever_returning_fewer_documents_than_k_marks_those_k_not_retrieved(tmp_path):
    class TopTwo(OverlapRetriever):
        def retrieve(self, queries, k):  # its own k = 2, whatever k is asked
            return {
                q: Ranking(query_id=q, docs=r.docs[:2])
                for q, r in super().retrieve(queries, k).items()
            }

    comp = parts()
    comp.retriever = TopTwo()
    said: list[str] = []
    out = run_sweep(
        config(),
        store=open_store(tmp_path / "r.sqlite"),
        components=comp,
        testset=make_testset(),
        progress=said.append,
    )
    choice = out.summary.choice
    assert choice.not_retrieved == [3, 4]
    assert choice.best_k in (1, 2) and set(choice.within_noise) <= {1, 2}
    assert any("returned at most 2 documents" in s and "not retrieved" in s for s in said)


# ---------------------------------------------------------------- refused before anything runs


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("ks: [true, 2]\n", ":2: ks.0: Input should be a valid integer (got true)"),
        (
            "objective: {weights: {faithfulnes: 1}}\n",
            ":2: objective.weights.faithfulnes: not a judge of this sweep",
        ),
        ("ks: [1]\nseed: 1\nks: [2]\n", ":4: duplicate key 'ks' (first on line 2)"),
        (
            "retriever: {kind: bm25, options: {k3: 1}}\n",
            ":2: unknown key 'retriever.options.k3' for BM25Retriever",
        ),
        (
            "generator:\n  kind: extractive\n  options: {max_sentence: 2}\n",
            ":4: unknown key 'generator.options.max_sentence' for ExtractiveGenerator; did you "
            "mean 'max_sentences'?",
        ),
    ],
)
def test_bad_sweep_configs_are_refused_naming_file_line_and_key(tmp_path, body, expected):
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text("dataset: {path: .}\n" + body)
    with pytest.raises(ConfigError) as exc:
        load_config(cfg)
    assert f"{cfg}{expected}" in str(exc.value)


def test_a_config_that_is_not_utf8_is_refused_at_its_line(tmp_path):
    """It named a byte position ('can't decode byte 0xe9 in position 31'), not a line."""
    cfg = tmp_path / "sweep.yaml"
    cfg.write_bytes(b"dataset: {path: .}\nks: [1]\n# caf\xe9\n")
    with pytest.raises(ConfigError) as exc:
        load_config(cfg)
    assert str(exc.value).startswith(f"{cfg}:3: not valid UTF-8")


def test_a_resume_under_changed_generation_settings_is_refused(llm_env, tmp_path, monkeypatch):
    store = open_store(tmp_path / "runs.sqlite")

    def comp() -> Components:
        c = parts()
        c.llm = LLMClient.from_env()
        return c

    out = run_sweep(config(), store=store, components=comp(), testset=make_testset())
    llm = store.manifest(out.run_id).config["definition"]["llm"]
    assert llm["model"] == "fake-model" and llm["temperature"] == 0.0
    monkeypatch.setenv("RAGJUDGE_MAX_TOKENS", "64")
    with pytest.raises(ConfigError, match=r"llm\.max_tokens: 2048 -> 64"):
        run_sweep(
            config(), store=store, components=comp(), testset=make_testset(), resume=out.run_id
        )


def test_an_empty_corpus_is_named(tmp_path):
    ts = TestSet(name="x", documents=[], cases=make_testset().cases)
    cfg = config(dataset={"path": str(tmp_path)})
    with pytest.raises(ConfigError, match=r"corpus\.jsonl: the corpus is empty"):
        check_ks(cfg, ts)


# ---------------------------------------------------------------- labels and agreement


def test_agree_with_no_label_filled_in_exits_2(tmp_path, capsys):
    sheet = tmp_path / "to_label.csv"
    sheet.write_text("item_id,dimension,label\nq1@k1,faithfulness,\nq2@k1,faithfulness,\n")
    code, text = run_cli(["agree", "--labels", str(sheet), "--results", str(sheet)], capsys)
    assert (
        code == 2
        and f"{sheet}: no labels: the file has no rows, or every 'label' cell is empty (2 rows)"
        in " ".join(text.split())
    )
    # a folder given as the labels, and an output folder that does not exist: said at once
    code, text = run_cli(["agree", "--labels", str(tmp_path), "--results", str(sheet)], capsys)
    assert code == 2 and f"{tmp_path}: a folder, not a label file" in text
    out = tmp_path / "no" / "agree.json"
    code, text = run_cli(
        ["agree", "--labels", str(sheet), "--results", str(sheet), "--json", str(out)], capsys
    )
    assert code == 2 and f"--json {out}: no folder {out.parent}" in " ".join(text.split())


def test_a_label_csv_with_an_unclosed_quote_is_a_csv_error_at_its_line(tmp_path):
    from ragjudge.calibrate.labels import load_labels

    sheet = tmp_path / "labels.csv"
    sheet.write_text('item_id,dimension,label\nq1@k1,"faithfulness,1\nq2@k1,faithfulness,0\n')
    with pytest.raises(DataError, match=r"labels\.csv:2: malformed CSV: .*quote left open"):
        load_labels(sheet)


def test_mean_intervals_stay_within_the_range_of_the_mean():
    from ragjudge.calibrate.ppi import estimate_mean

    y = [1.0] * 11 + [0.0]  # 0.917 +- 2.201 * 0.083 (t, 11 df) would reach 1.10
    rng = np.random.default_rng(0)
    f = np.clip(np.array(y) + rng.normal(0, 0.3, 12), 0, 1)
    for e in estimate_mean(y, f, rng.uniform(0.6, 1.0, 40)):
        assert 0.0 <= e.ci_low <= e.value <= e.ci_high <= 1.0, e
    human = estimate_mean(y, f, rng.uniform(0.6, 1.0, 40))[0]
    assert human.ci_high == 1.0 and human.ci_low == pytest.approx(0.917 - 2.201 * 0.0833, abs=2e-3)


def test_a_data_warning_is_one_clean_line(capsys, monkeypatch):
    import warnings

    from ragjudge.io.diagnostics import DataWarning, warn_counted
    from ragjudge.store.sql import SqlRunStore

    def warn(self: SqlRunStore) -> list:
        warn_counted("qrels queries are not in queries.jsonl", ["q9"], path="qrels/test.tsv")
        return []

    monkeypatch.setattr(SqlRunStore, "list_runs", warn)
    with warnings.catch_warnings():
        warnings.simplefilter("always", DataWarning)
        code, text = run_cli(["runs", "list"], capsys)
    assert code == 0
    lines = [ln for ln in text.splitlines() if "qrels" in ln]
    assert lines == [
        "warning: qrels/test.tsv: 1 qrels queries are not in queries.jsonl (e.g. 'q9')"
    ]
    assert "warn_counted(" not in text and ".py:" not in text


# ---------------------------------------------------------------- bounded work, secrets


def test_a_2_mb_document_is_judged_offline_in_bounded_time_with_the_cut_recorded():
    import asyncio

    from ragjudge.generate import ExtractiveGenerator
    from ragjudge.judges.runner import run_judges
    from ragjudge.schema import Document, JudgeInput, TestCase

    rng = np.random.default_rng(0)
    words = np.array("the copper mine near river produced ore for many years closed".split())
    sentences = [" ".join(rng.choice(words, 14)).capitalize() + "." for _ in range(20_000)]
    big = " ".join(sentences)[:2_000_000]
    item = JudgeInput(
        id="x",
        question="Where was the copper mine?",
        answer="The copper mine was near the river.",
        contexts=[big, "Copper was mined near the river."],
        reference="Near the river.",
    )
    judges = [create_judge(n, "offline") for n in JUDGE_NAMES]
    warm = item.model_copy(update={"contexts": ["Copper was mined near the river."]})
    asyncio.run(run_judges(judges, [warm], progress=False))  # model loading is not timed
    t0 = time.perf_counter()
    out = asyncio.run(run_judges(judges, [item], progress=False))
    assert time.perf_counter() - t0 < 120  # > 5 min before the cap; seconds on an idle machine
    for name, (res,) in out.items():
        assert res.status.value == "ok", (name, res.error)
        feats = res.evidence.features
        assert feats["truncated"] == 1.0 and feats["contexts_truncated"] == 1.0
        assert feats["context_chars_dropped"] == len(big) - 6000
    ans = ExtractiveGenerator().answer(
        TestCase(id="q", question="Where was the copper mine?"), [Document(id="d", text=big)], 1
    )
    assert len(ans.contexts[0]) < 6100 and ans.contexts[0].endswith("[...truncated]")


def test_a_judge_that_declares_an_input_cap_reads_the_item_cut():
    """The runner asks the judge (``protocols.CappedJudge``), not its backend's name."""
    import asyncio

    import ragjudge
    from ragjudge.judges.runner import run_judges
    from ragjudge.prompts import TRUNCATION_MARK
    from ragjudge.schema import JudgeInput, JudgeResult, JudgeStatus

    class Lengths(ragjudge.JudgeBase):
        name, input_cap = "lengths", (10, 12)

        async def _judge(self, item: JudgeInput) -> JudgeResult:
            return self.result(item, JudgeStatus.ok, score=len(item.contexts[0]) / 100)

    item = JudgeInput(id="x", question="Q?", answer="A.", contexts=["x" * 50, "y" * 5])
    (res,) = asyncio.run(run_judges([Lengths()], [item], progress=False))["lengths"]
    assert res.score == (6 + len(TRUNCATION_MARK)) / 100  # each context keeps total // 2
    assert res.evidence.features["context_chars_dropped"] == 44


def test_redact_removes_every_form_of_a_secret(monkeypatch):
    import base64

    from ragjudge.llm.settings import LLMSettings, error_text, redact, redact_url

    assert redact_url("http://u:p@ss@127.0.0.1:8/v1 down") == "http://***@127.0.0.1:8/v1 down"
    assert redact_url("u:hunter22@10.1.2.3:8/v1") == "***@10.1.2.3:8/v1"
    assert redact_url("https://h/v1?api-key=abc123&v=2") == "https://h/v1?api-key=***&v=2"
    assert redact_url("write to ada@example.org") == "write to ada@example.org"
    assert redact_url("u:pw@db.internal/x") == "***@db.internal/x"
    assert redact_url("u:pw@localhost:5432") == "***@localhost:5432"
    assert redact_url("u:pw@pg:5432/db") == "***@pg:5432/db"
    # a component's name@version in a run's identity is not user:password@host
    named = "the code of retriever parts:retrieve@43374c0d9e1f changed"
    assert redact_url(named) == named
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-canary-1")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://user:{SECRET}@127.0.0.1:9/v1")
    LLMSettings(api_key="sk-made-canary-2")  # type: ignore[arg-type]
    basic = base64.b64encode(f"user:{SECRET}".encode()).decode()
    echoed = f"401: Bearer sk-env-canary-1 / sk-made-canary-2 / Basic {basic} / {SECRET}"
    assert redact(echoed) == "401: Bearer *** / *** / Basic *** / ***"
    assert error_text(RuntimeError(echoed)) == "RuntimeError: " + redact(echoed)


def test_an_endpoint_that_echoes_the_key_leaves_no_trace(tmp_path, capsys, monkeypatch):
    """An endpoint may echo the Authorization header in its error body: the key is masked in
    the error line, the rows written and the run store."""
    import http.server
    import json
    import threading

    class Echo(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.dumps({"error": {"message": f"bad key {self.headers['Authorization']}"}})
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = "sk-echoed-canary-42"
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("RAGJUDGE_MAX_ATTEMPTS", "1")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "a", "question": "Q?", "answer": "A.", "contexts": ["A."]}\n')
    out = tmp_path / "out.jsonl"
    try:
        code, text = run_cli(
            ["judge", "--input", str(rows), "--judges", "faithfulness", "--output", str(out)],
            capsys,
        )
    finally:
        server.shutdown()
    assert code == 2 and "bad key Bearer ***" in text, text
    assert key not in text and not out.exists()  # the pre-flight call found it: nothing run


def test_credentials_in_the_base_url_never_show(fake_llm, capsys, monkeypatch):
    from ragjudge.llm.settings import LLMSettings

    url = fake_llm.base_url.replace("http://", f"http://user:{SECRET}@")
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("RAGJUDGE_MODEL", "fake-model")
    settings = LLMSettings.from_env()
    assert SECRET not in repr(settings) and SECRET not in str(settings.safe_dict())
    code, text = run_cli(["llm", "check"], capsys)
    assert code == 0, text
    assert "http://***@127.0.0.1" in text and SECRET not in text


def test_bad_values_are_refused_before_any_work(tmp_path, capsys, _isolated_home):
    """Values that would silently do nothing, or the wrong thing, are one error line."""
    from ragjudge.generate.extractive import ExtractiveGenerator
    from ragjudge.report.thresholds import load_thresholds

    qrels, run = tmp_path / "q.qrels", tmp_path / "r.trec"
    qrels.write_text("q1 0 d1 1\n")
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    afile = tmp_path / "a-file"
    afile.write_text("")
    cases = [
        (["metrics", "--qrels", str(qrels), "--run", str(run), "--k", "1,,3"], "--k must be"),
        (["metrics", "--qrels", str(qrels), "--run", str(run), "--k", "5,5"], "repeats"),
        (["demo", "--out", str(afile)], "--out must be a folder"),
        (["report", "--run", "latest", "--format", " "], "--format names no format"),
    ]
    from ragjudge.schema import JudgeResult, JudgeStatus

    results = tmp_path / "results.jsonl"
    result = JudgeResult(
        judge="faithfulness", judge_version="v", backend="offline", item_id="q1@k1",
        score=0.5, status=JudgeStatus.ok,
    )  # fmt: skip
    results.write_text(result.model_dump_json() + "\n")
    cases += [
        (["report", "--run", "latest", "--store", str(tmp_path)], "no run store file here"),
        (["report", "--run", "latest", "--thresholds", str(tmp_path)], "is a folder, not a file"),
        (
            ["spot-check", "--results", str(results), "--dimension", "relevance"],
            "--dimension relevance: no such judge in",
        ),
    ]
    for argv, needle in cases:
        code, text = run_cli(argv, capsys)
        assert code == 2 and needle in text and len(text.strip().splitlines()) == 1, text
    assert not (tmp_path / "missing.sqlite").exists()
    labels = tmp_path / "labels.csv"
    labels.write_text("item_id,dimension,label\nq1@k1,faithfulness,1\n")
    code, text = run_cli(["agree", "--run", "latest", "--labels", str(labels),
                          "--store", str(tmp_path / "missing.sqlite")], capsys)  # fmt: skip
    assert code == 2 and "no run store file here" in text
    assert not (tmp_path / "missing.sqlite").exists()
    thresholds = tmp_path / "t.yaml"
    thresholds.write_text("primary: {metrics: []}\n")
    with pytest.raises(ConfigError, match=r"t\.yaml:1: primary\.metrics: List should have"):
        load_thresholds(thresholds)
    with pytest.raises(ConfigError, match="max_sentences must be at least 1"):
        ExtractiveGenerator(max_sentences=0)
    with open_store() as store, pytest.raises(ConfigError, match="a tag needs a name"):
        store.tag("20260101-none", " ")
