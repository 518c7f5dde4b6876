"""No run that scored nothing passes: a judge below its coverage floor (every reply
unparseable, an endpoint that cannot be used) fails the sweep, ``evaluate()`` and ``judge``
with one line naming the judge, its coverage and its dominant failure status with a count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragjudge.api.evaluate import evaluate
from ragjudge.errors import ConfigError
from ragjudge.judges.coverage import decided
from ragjudge.judges.registry import create_judge
from ragjudge.llm import LLMClient
from ragjudge.schema import JudgeInput, JudgeResult, JudgeStatus
from ragjudge.store import open_store
from ragjudge.store.rows import JudgeResults, RowSource
from ragjudge.sweep.components import Components
from ragjudge.sweep.run import run_sweep
from ragjudge.sweep.stages import (
    StageFailedError,
    coverage_floor,
    judging_failure,
    stored_judging_failure,
)
from ragjudge.testing.faults import FaultPlan
from ragjudge.testing.server import FakeLLMServer
from tests.test_sweep_run import FirstSentenceGenerator, OverlapRetriever, config, make_testset

ROWS = [
    {
        "id": f"r{i}",
        "question": f"What is item {i}?",
        "answer": f"Item {i} is a lamp. It was lit in 181{i}.",
        "contexts": [f"Item {i} is a lamp lit in 181{i}.", "Unrelated text."],
        "reference": f"Item {i} is a lamp lit in 181{i}.",
    }
    for i in range(4)
]


def _results(statuses: list[JudgeStatus]) -> list[JudgeResult]:
    return [
        JudgeResult(
            judge="faithfulness",
            backend="llm",
            judge_version="v1",
            item_id=f"i{i}",
            status=s,
            score=0.5 if s == JudgeStatus.ok else None,
            error=None if s == JudgeStatus.ok else f"{s.value} happened",
        )
        for i, s in enumerate(statuses)
    ]


def test_coverage_floor_names_judge_coverage_and_dominant_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ok, bad, skip = JudgeStatus.ok, JudgeStatus.parse_error, JudgeStatus.skipped_missing_reference
    assert judging_failure({"faithfulness": _results([ok, ok, bad, skip])}) is None  # 2/3
    msg = judging_failure({"faithfulness": _results([ok, bad, bad, JudgeStatus.timeout])})
    assert msg == (
        "judging failed: faithfulness scored 1/4 (25%, floor 50%); parse_error x2: "
        "parse_error happened"
    )
    monkeypatch.setenv("RAGJUDGE_MIN_COVERAGE", "0.9")
    assert judging_failure({"faithfulness": _results([ok] * 8 + [bad, bad])}) is not None
    monkeypatch.setenv("RAGJUDGE_MIN_COVERAGE", "0")
    assert judging_failure({"faithfulness": _results([ok] + [bad] * 9)}) is None
    # nothing scored is below every floor
    assert judging_failure({"faithfulness": _results([bad])}) is not None
    assert judging_failure({"f": _results([JudgeStatus.no_claims])}) is None
    monkeypatch.setenv("RAGJUDGE_MIN_COVERAGE", "2")
    with pytest.raises(ConfigError, match="RAGJUDGE_MIN_COVERAGE"):
        coverage_floor()


PART_ONLY = '{"backend": "llm", "score": "not a score"}'
"""A stored result whose backend field parses and whose whole does not."""


def test_the_stored_line_is_the_same_and_parses_only_the_failures() -> None:
    """A run's stored results give ``judging_failure``'s line from their status and score
    columns, judges in the order asked; a decided result is never parsed whole, only its
    ``backend`` when its judge has a failure (its stored JSON here would not parse whole)."""
    ok, bad, skip = JudgeStatus.ok, JudgeStatus.parse_error, JudgeStatus.skipped_missing_reference
    cases = ([ok, ok, bad, skip], [ok, bad, bad, JudgeStatus.timeout], [bad], [skip])
    for statuses in cases:
        for other in ([bad, ok, ok], [bad, bad, ok]):  # relevancy above, then below, its floor
            results = _results(statuses) + [
                r.model_copy(update={"judge": "relevancy"}) for r in _results(other)
            ]
            rows = {
                (r.judge, 1, r.item_id): (
                    r.judge, 1, r.item_id, r.status.value, r.score,
                    PART_ONLY if decided(r) else r.model_dump_json(),
                )
                for r in results
            }  # fmt: skip
            faith, rel = results[: len(statuses)], results[len(statuses) :]
            stored = JudgeResults(rows, RowSource("runs.sqlite", "r1"))
            assert stored_judging_failure(stored) == judging_failure(
                {"faithfulness": faith, "relevancy": rel}
            )
            assert stored_judging_failure(stored, ["faithfulness"]) == judging_failure(
                {"faithfulness": faith}
            )
            line = stored_judging_failure(stored, ["relevancy", "faithfulness"])
            assert line == judging_failure({"relevancy": rel, "faithfulness": faith})
            if statuses == [bad] and other == [bad, bad, ok]:  # both below: in the order asked
                assert line and line.index("relevancy scored 1/3") < line.index(
                    "faithfulness scored 0/1"
                )
    assert stored_judging_failure(stored, ["faithfulness"]) is None  # [skip]: nothing called


def test_a_backend_part_whose_every_call_failed_is_below_the_floor() -> None:
    """A cascade's rows kept offline do not hide that each escalated call failed: each
    backend's part is held to the floor too, in memory and from the store alike."""
    ok, bad = JudgeStatus.ok, JudgeStatus.provider_error
    kept = [r.model_copy(update={"backend": "offline"}) for r in _results([ok, ok, ok])]
    sent = [r.model_copy(update={"item_id": f"e{r.item_id}"}) for r in _results([bad, bad])]
    line = judging_failure({"faithfulness": kept + sent})
    assert line == (
        "judging failed: faithfulness (llm part) scored 0/2 (0%, floor 50%); "
        "provider_error x2: provider_error happened"
    )
    rows = {
        ("faithfulness", 1, r.item_id): (
            "faithfulness", 1, r.item_id, r.status.value, r.score, r.model_dump_json()
        )
        for r in kept + sent
    }  # fmt: skip
    assert stored_judging_failure(JudgeResults(rows, RowSource("runs.sqlite", "r1"))) == line
    assert judging_failure({"faithfulness": kept + sent[:1] + _results([ok])}) is None  # 1/2


def test_sweep_whose_every_reply_is_unparseable_fails(
    llm_env: FakeLLMServer, tmp_path: Path
) -> None:
    """It used to exit 0 as "finished" with nothing scored."""
    llm_env.set_faults(FaultPlan(rates={"malformed": 1.0}))
    client = LLMClient.from_env()
    judges = [create_judge("faithfulness", "llm", client=client)]
    comp = Components(OverlapRetriever(), FirstSentenceGenerator(), judges, llm=client)
    cfg = config(judges={"names": ["faithfulness"], "backend": "llm"}, ks=[1, 2])
    store = open_store(tmp_path / "runs.sqlite")
    with pytest.raises(StageFailedError) as exc:
        run_sweep(cfg, store=store, components=comp, testset=make_testset())
    msg = str(exc.value)
    assert "faithfulness scored 0/" in msg and "parse_error x" in msg and "\n" not in msg
    (run,) = store.list_runs()
    assert run.status == "failed"


def test_evaluate_whose_every_reply_is_unparseable_raises(llm_env: FakeLLMServer) -> None:
    llm_env.set_faults(FaultPlan(rates={"malformed": 1.0}))
    with pytest.raises(StageFailedError, match=r"answer_relevancy scored 0/4 \(0%"):
        evaluate(ROWS, ["answer_relevancy"], backend="llm")
    llm_env.set_faults(None)
    res = evaluate(ROWS, ["answer_relevancy"], backend="llm")
    assert res.aggregates["answer_relevancy"].n_scored == 4


def test_a_misconfigured_endpoint_is_found_by_one_preflight_call(llm_env: FakeLLMServer) -> None:
    llm_env.models = ["the-served-model"]  # the environment asks for fake-model: 404
    with pytest.raises(ConfigError) as exc:
        evaluate(ROWS, ["answer_relevancy", "faithfulness"], backend="llm")
    msg = str(exc.value)
    assert msg.startswith("pre-flight call to model 'fake-model' at http://127.0.0.1:")
    assert "not found" in msg and "\n" not in msg
    # one call for the one (endpoint, model) of both judges; no judge call was sent
    assert llm_env.stats()["preflight"] == 1 and llm_env.stats()["chat_requests"] == 0


class CountingFirstJudge:
    """A first (offline) judge that counts the items it was asked about."""

    name, version, backend = "faithfulness", "count@1", "offline"
    requires_reference, needs_answer, needs_contexts = False, True, True

    def __init__(self) -> None:
        self.seen = 0

    async def judge(self, item: JudgeInput) -> JudgeResult:
        self.seen += 1
        return JudgeResult(judge=self.name, backend=self.backend, item_id=item.id, score=0.5)


def test_a_cascade_sends_its_preflight_before_any_offline_work(
    llm_env: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The LLM part of a cascade judge is pre-flighted like an LLM judge: a dead endpoint
    (here: the scripted server stopped) or an unknown model stops ``evaluate()`` and ``judge``
    with one line before the first pass scores a single item."""
    from ragjudge.cli import main
    from ragjudge.judges.cascade import CascadeJudge

    def cascade() -> tuple[CascadeJudge, CountingFirstJudge]:
        first = CountingFirstJudge()
        second = create_judge("faithfulness", "llm", client=LLMClient.from_env())
        return CascadeJudge(first, second), first

    llm_env.models = ["the-served-model"]  # the environment asks for fake-model: 404
    judge, first = cascade()
    with pytest.raises(ConfigError) as exc:
        evaluate(ROWS, [judge])
    assert str(exc.value).startswith("pre-flight call to model 'fake-model' at http://")
    assert "\n" not in str(exc.value) and first.seen == 0
    assert llm_env.stats()["preflight"] == 1 and llm_env.stats()["chat_requests"] == 0

    with FakeLLMServer() as dead:
        url = dead.base_url
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    judge, first = cascade()
    with pytest.raises(ConfigError) as exc:
        evaluate(ROWS, [judge])
    assert "pre-flight call" in str(exc.value) and "cannot reach" in str(exc.value)
    assert first.seen == 0
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    with pytest.raises(SystemExit) as code:
        main(["judge", "-i", str(src), "--judges", "faithfulness", "--backend", "cascade"])
    err = capsys.readouterr().err.strip()
    assert code.value.code == 2 and len(err.splitlines()) == 1 and "pre-flight call" in err, err


def test_report_on_a_run_below_its_floor_refuses_naming_the_judge(
    llm_env: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report`` refused a failed run before, saying only "status failed"; it now says why."""
    from ragjudge.cli import main

    client = LLMClient.from_env()
    judges = [create_judge("faithfulness", "llm", client=client)]
    comp = Components(OverlapRetriever(), FirstSentenceGenerator(), judges, llm=client)
    cfg = config(judges={"names": ["faithfulness"], "backend": "llm"}, ks=[1, 2])
    path = tmp_path / "runs.sqlite"
    store = open_store(path)
    llm_env.set_faults(FaultPlan(rates={"malformed": 1.0}))
    with pytest.raises(StageFailedError):
        run_sweep(cfg, store=store, components=comp, testset=make_testset())
    (bad,) = [r.run_id for r in store.list_runs()]
    llm_env.set_faults(None)
    good = run_sweep(cfg, store=store, components=comp, testset=make_testset(), new=True).run_id
    argv = ["report", "--run", bad, "--baseline", good, "--store", str(path)]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--out", str(tmp_path / "rep")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    (line,) = [ln for ln in err.splitlines() if ln.strip()]
    assert f"run {bad} is not finished (status failed, judging failed: faithfulness scored 0/" in (
        line
    )
    assert "parse_error x" in line and "--allow-unfinished" in line


@pytest.mark.parametrize("floor", ["abc", "2"])
def test_a_bad_floor_is_refused_before_any_call(
    llm_env: FakeLLMServer, floor: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """It was read only after judging, once every call was paid for."""
    from ragjudge.cli import main

    monkeypatch.setenv("RAGJUDGE_MIN_COVERAGE", floor)
    with pytest.raises(ConfigError, match=f"RAGJUDGE_MIN_COVERAGE='{floor}'"):
        evaluate(ROWS, ["answer_relevancy"], backend="llm")
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    with pytest.raises(SystemExit) as code:
        main(["judge", "-i", str(src), "--judges", "answer_relevancy", "--backend", "llm"])
    cfg = config(judges={"names": ["faithfulness"], "backend": "llm"}, ks=[1])
    with pytest.raises(ConfigError, match="RAGJUDGE_MIN_COVERAGE"):
        run_sweep(cfg, store=open_store(tmp_path / "r.sqlite"), testset=make_testset())
    assert code.value.code == 2 and llm_env.stats()["chat_requests"] == 0


def test_every_failing_judge_is_named_however_long_its_errors() -> None:
    """The line was cut at 1,000 characters, so a long first error hid the judges after it."""
    long = [
        r.model_copy(update={"judge": name, "error": "echoed request " * 200})
        for name in ("faithfulness", "answer_relevancy", "completeness", "context_precision")
        for r in _results([JudgeStatus.parse_error])
    ]
    by: dict[str, list[JudgeResult]] = {}
    for r in long:
        by.setdefault(r.judge, []).append(r)
    line = judging_failure(by)
    assert line is not None and "\n" not in line
    assert all(f"{name} scored 0/1" in line for name in by), line
    assert line.count("...") == len(by)
