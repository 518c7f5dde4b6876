"""The judge cascade: the offline judge decides what it is sure of, the LLM judge the rest.

Routing, budget and bookkeeping through the real ``openai`` client over HTTP to the scripted
local server (``tests/fixtures/llm.py``)."""

from __future__ import annotations

import pytest

import ragjudge
from ragjudge.errors import ConfigError
from ragjudge.judges.cascade import fit_band
from ragjudge.judges.registry import create_judge
from ragjudge.store import open_store
from ragjudge.sweep.components import build_components
from ragjudge.sweep.run import run_sweep
from tests.test_sweep_run import config, make_testset

ROWS = [
    {
        "id": "lit",
        "question": "When was the Greyhaven Rock Lighthouse first lit?",
        "answer": "It was first lit in 1811.",
        "contexts": ["When Greyhaven was first lit in 1811, its light came from 24 lamps."],
    },
    {
        "id": "engineer",
        "question": "Who was the engineer?",
        "answer": "Thomas Aldane designed it in Paris in 1920.",
        "contexts": ["Construction began in 1807 under the engineer Thomas Aldane."],
    },
    {
        "id": "fuel",
        "question": "What fuel did the lamps burn?",
        "answer": "The lamps burned colza oil, pressed from rapeseed, from 1846.",
        "contexts": ["From 1846 the Argand lamps burned colza oil pressed from rapeseed."],
    },
    {
        "id": "paint",
        "question": "How was the tower painted?",
        "answer": "The tower was probably painted white, like most towers of its time.",
        "contexts": ["The tower's granite was left bare until 1902."],
    },
]


def offline_scores() -> dict[str, float]:
    out = ragjudge.evaluate(ROWS, ["faithfulness"], backend="offline")
    return {r.item_id: float(r.score) for r in out.results["faithfulness"] if r.score is not None}


def test_routing_and_bookkeeping(llm_env):
    scores = offline_scores()
    assert len(scores) == len(ROWS)
    ordered = sorted(scores.values())
    low, high = ordered[1] - 1e-9, ordered[2] + 1e-9  # the two middle items escalate
    out = ragjudge.evaluate(
        ROWS, ["faithfulness"], backend="cascade", options={"low": low, "high": high}
    )
    results = {r.item_id: r for r in out.results["faithfulness"]}
    escalated = {i for i, s in scores.items() if low <= s <= high}
    assert len(escalated) == 2
    judge_calls = [r for r in llm_env.chat_requests() if "faithfulness" in str(r)]
    assert len(judge_calls) == len(escalated)  # one LLM call per escalated item, none else
    for item_id, r in results.items():
        f = r.evidence.features
        assert f["cascade_first_score"] == pytest.approx(scores[item_id])
        assert r.judge_version.startswith("cascade[band=")
        if item_id in escalated:
            assert (r.backend, f["cascade_escalated"], r.usage.calls) == ("llm", 1.0, 1)
            assert r.evidence.claims  # the LLM judge's own evidence
        else:
            assert (r.backend, f["cascade_escalated"], r.usage.calls) == ("offline", 0.0, 0)
            assert r.score == pytest.approx(scores[item_id])
    assert out.usage.calls == len(escalated)


def test_band_options_are_checked():
    with pytest.raises(ConfigError, match=r"low = 0\.8 is above high = 0\.2"):
        create_judge("faithfulness", "cascade", low=0.8, high=0.2)
    with pytest.raises(
        ConfigError, match=r"judges\.options of the faithfulness cascade: width: Extra inputs"
    ):
        create_judge("faithfulness", "cascade", width=0.3)
    with pytest.raises(ConfigError, match="takes no option low"):
        create_judge("faithfulness", "offline", low=0.3)


def test_fit_band_reaches_the_target():
    scores = [0.05, 0.1, 0.2, 0.35, 0.45, 0.55, 0.6, 0.7, 0.8, 0.9, 0.95, 0.4]
    verdicts = [0, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1]
    loose = fit_band(scores, verdicts, target=0.8)
    tight = fit_band(scores, verdicts, target=1.0)
    assert tight.low <= loose.low and tight.high >= loose.high
    for band, target in ((loose, 0.8), (tight, 1.0)):
        agree = [
            band.low <= band.probability(s) <= band.high or (s >= 0.5) == y
            for s, y in zip(scores, verdicts, strict=True)
        ]
        assert sum(agree) / len(agree) >= target
    assert not (loose.low == 0.0 and loose.high == 1.0)  # a loose target keeps some offline


def cascade_config(**budget):
    return config(
        judges={
            "names": ["faithfulness", "answer_relevancy"],
            "backend": "cascade",
            "options": {"low": 0.0, "high": 0.6},
        },
        budget=budget,
        ks=[1, 2],
    )


def sweep_into(path, cfg):
    return run_sweep(
        cfg, store=open_store(path), components=build_components(cfg), testset=make_testset()
    )


def test_sweep_preflight_stops_before_spending(llm_env, tmp_path):
    out = sweep_into(tmp_path / "r.sqlite", cascade_config(max_calls=1))
    assert out.status == "stopped_budget"
    assert llm_env.chat_requests() == []  # nothing was sent


def test_sweep_runs_the_cascade_within_budget(llm_env, tmp_path):
    cfg = cascade_config(max_calls=200)
    store = open_store(tmp_path / "r.sqlite")
    out = run_sweep(cfg, store=store, components=build_components(cfg), testset=make_testset())
    assert out.status == "finished"
    rows = [r.result for r in store.judge_results(out.run_id)]
    assert rows
    by = {b: [r for r in rows if r.backend == b] for b in ("offline", "llm")}
    assert by["llm"] and by["offline"]  # some escalated, some kept
    assert all(r.evidence.features["cascade_escalated"] == 1.0 for r in by["llm"])
    assert all(r.usage.calls == 0 for r in by["offline"])
    paid = sum(r.usage.calls for r in rows)
    assert paid == len(llm_env.chat_requests()) <= 200


def test_report_says_what_differs_from_an_llm_run(llm_env, tmp_path):
    from ragjudge.report.from_store import check_comparable, load_run_scores

    store = open_store(tmp_path / "r.sqlite")
    llm_cfg = config(judges={"names": ["faithfulness"], "backend": "llm"}, ks=[1, 2])
    casc_cfg = config(
        judges={"names": ["faithfulness"], "backend": "cascade", "options": {"high": 0.6}},
        ks=[1, 2],
    )
    runs = [
        run_sweep(c, store=store, components=build_components(c), testset=make_testset())
        for c in (llm_cfg, casc_cfg)
    ]
    base, current = (load_run_scores(store, r.run_id) for r in runs)
    with pytest.raises(ConfigError) as err:
        check_comparable(current, base, allow_partial=False)
    message = str(err.value)
    assert "judge versions differ: faithfulness" in message
    assert "faithfulness decided by llm in the baseline, by " in message
    assert "offline" in message.split("in the baseline, by ", 1)[1]


def test_judge_cli_says_the_preflight_before_judging(llm_env, tmp_path):
    import json
    import os
    import subprocess
    import sys

    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragjudge",
            "judge",
            "--input",
            str(src),
            "--judges",
            "faithfulness",
            "--backend",
            "cascade",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    line = " ".join(res.stderr.split())
    sent = len(llm_env.chat_requests())
    assert sent >= 1  # the default band escalates some of these rows
    assert f"faithfulness: {sent} of {len(ROWS)} items" in line and "expected to escalate" in line
    assert f"backend cascade: {len(ROWS)} rows, {sent} calls" in " ".join(res.stdout.split())


def test_a_budget_the_preflight_fits_is_enough(llm_env, tmp_path, monkeypatch, capsys):
    """Items the cascade keeps offline are never admitted against the budget, nor is the
    extractive generator's work: a run whose budget is exactly what the pre-flight expects
    finishes (it used to stop at the last kept item, or already while generating, with exit 3)."""
    from ragjudge.cli import main

    monkeypatch.setenv("RAGJUDGE_HOME", str(tmp_path / "first"))  # a cold LLM cache each run
    first = sweep_into(tmp_path / "a.sqlite", cascade_config(max_calls=200))
    needed = len(llm_env.chat_requests())
    assert first.status == "finished" and 0 < needed < len(make_testset().cases)
    monkeypatch.setenv("RAGJUDGE_HOME", str(tmp_path / "second"))
    path = tmp_path / "b.sqlite"
    out = sweep_into(path, cascade_config(max_calls=needed))
    assert out.status == "finished"
    assert len(llm_env.chat_requests()) == 2 * needed
    with pytest.raises(SystemExit) as code:
        main(["runs", "show", out.run_id, "--store", str(path)])
    assert code.value.code in (0, None)
    assert "cascade[band=0-0.6]" in capsys.readouterr().out  # not taken for markup


def test_every_escalated_call_failing_fails_the_run(llm_env, tmp_path):
    """Rows kept offline do not hide an LLM part whose every call failed: the run ends
    ``failed`` naming the judge's llm part (it ended ``finished`` while fewer than half the
    items escalated)."""
    from ragjudge.sweep.stages import StageFailedError
    from ragjudge.testing.faults import FaultPlan

    llm_env.set_faults(FaultPlan(rates={"500": 1.0}))
    cfg = config(
        judges={"names": ["faithfulness"], "backend": "cascade", "options": {"high": 0.35}},
        ks=[1, 2],
    )
    store = open_store(tmp_path / "r.sqlite")
    with pytest.raises(StageFailedError) as exc:
        run_sweep(cfg, store=store, components=build_components(cfg), testset=make_testset())
    msg = str(exc.value)
    assert "faithfulness (llm part) scored 0/" in msg and "provider_error x" in msg, msg
    (run,) = store.list_runs()
    assert run.status == "failed"
    rows = [r.result for r in store.judge_results(run.run_id)]
    kept = [r for r in rows if r.backend == "offline" and r.score is not None]
    assert 2 * len(kept) > len(rows)  # most rows were scored offline: the old rule passed


def test_a_prechecked_row_is_recorded_as_decided_without_a_call(llm_env):
    rows = [*ROWS, {**ROWS[0], "id": "empty", "answer": " "}]
    out = ragjudge.evaluate(rows, ["faithfulness"], backend="cascade")
    empty = next(r for r in out.results["faithfulness"] if r.item_id == "empty")
    assert (empty.status.value, empty.backend, empty.usage.calls) == ("invalid_input", "offline", 0)


@pytest.mark.parametrize("platt", [[float("nan"), 0.0], [1.0, float("inf")], [-1.0, 0.0]])
def test_a_calibration_that_is_not_finite_or_falls_is_refused(platt):
    with pytest.raises(ConfigError, match=r"judges\.options of the faithfulness cascade"):
        create_judge("faithfulness", "cascade", platt=platt)


def test_fit_band_refuses_what_it_cannot_fit():
    with pytest.raises(ValueError, match="not a finite number"):
        fit_band([0.2, float("nan"), 0.7], [0, 1, 1])
    with pytest.raises(ValueError, match=r"target = 1\.5"):
        fit_band([0.2, 0.4, 0.7], [0, 1, 1], target=1.5)


def test_a_bad_band_in_a_config_file_is_refused_at_its_line(tmp_path):
    from ragjudge.sweep.config import load_config

    path = tmp_path / "sweep.yaml"
    path.write_text(
        "dataset: {path: bundled:demo}\n"
        "judges:\n"
        "  names: [faithfulness]\n"
        "  backend: cascade\n"
        "  options:\n"
        "    high: 0.6\n"
        "    low: 1.5\n"
    )
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert str(exc.value) == (
        f"{path}:7: judges.options.low: Input should be less than or equal to 1"
    )


def test_judge_cli_takes_the_band_as_options(llm_env, tmp_path, capsys):
    """``--option`` gives every judge's factory its options, the cascade its band (it had no
    way to take one); a pair without ``=`` is one line, exit 2."""
    import json

    from ragjudge.cli import main

    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "out.jsonl"
    argv = ["judge", "-i", str(src), "--judges", "faithfulness", "--backend", "cascade"]
    with pytest.raises(SystemExit) as code:
        main([*argv, "--option", "low=0", "--option", "high=1", "--no-progress", "-o", str(out),
              "--json", str(tmp_path / "summary.json")])  # fmt: skip
    assert code.value.code == 0
    (pre,) = json.loads((tmp_path / "summary.json").read_text())["preflight"]
    assert (pre["judge"], pre["items"], pre["escalated"]) == ("faithfulness", len(ROWS), len(ROWS))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(llm_env.chat_requests()) == len(ROWS)  # the band [0, 1]: every item escalates
    assert all("band=0-1" in json.dumps(r) for r in rows)
    with pytest.raises(SystemExit) as code:
        main([*argv, "--option", "low"])
    assert code.value.code == 2 and "--option 'low': expected KEY=VALUE" in capsys.readouterr().err


def test_the_sweep_function_takes_the_band(llm_env, tmp_path):
    ts = make_testset()
    out = ragjudge.sweep(
        ts, retriever="bm25", judges=["faithfulness"], backend="cascade",
        options={"low": 0.0, "high": 1.0}, ks=[1], store=tmp_path / "r.sqlite",
    )  # fmt: skip
    scored = [r for r in open_store(tmp_path / "r.sqlite").judge_results(out.run_id)]
    decided = [r.result for r in scored if r.result.score is not None]
    assert out.status == "finished" and decided
    assert all(r.backend == "llm" for r in decided)  # the band [0, 1]: every scored item
    with pytest.raises(ConfigError, match="low: Input should be less than or equal to 1"):
        ragjudge.sweep(ts, retriever="bm25", judges=["faithfulness"], backend="cascade",
                       options={"low": 2}, ks=[1], store=tmp_path / "r.sqlite")  # fmt: skip
