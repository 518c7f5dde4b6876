"""Fitted parameters: the bundled file loads and is versioned; ``fit-judges`` refits on a tiny
labels file and writes a params file that the judges then load; bad label rows are located."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragjudge.cli import app
from ragjudge.errors import ConfigError, DataError
from ragjudge.judges.offline import OfflineFaithfulnessJudge
from ragjudge.judges.offline.fit import fit_logistic, parse_label, read_labels
from ragjudge.judges.offline.params import DEFAULT_PARAMS, MODEL_FEATURES, Params, load_params
from ragjudge.schema import JudgeInput

CONTEXT = (
    "Marie Curie won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in "
    "1911. She was born in Warsaw in 1867. She discovered polonium and radium."
)
SUPPORTED = [
    "Marie Curie won the Nobel Prize in Physics in 1903.",
    "Curie won the Nobel Prize in Chemistry in 1911.",
    "She was born in Warsaw in 1867.",
    "Marie Curie discovered polonium.",
    "Curie discovered radium.",
    "Marie Curie was born in Warsaw.",
]
UNSUPPORTED = [
    "Marie Curie won the Nobel Prize in Literature in 1920.",
    "Curie was born in Paris in 1901.",
    "She discovered penicillin in 1928.",
    "Marie Curie never won a Nobel Prize.",
    "Curie invented the telephone.",
    "She was born in Berlin in 1850.",
]
QUESTION = "What prizes did Marie Curie win and when was she born?"


def _labels(path: Path) -> Path:
    rows = [
        {
            "dimension": "faithfulness",
            "question": QUESTION,
            "answer": c,
            "claim": c,
            "contexts": [CONTEXT],
            "label": lab,
            "group": f"g{i}",
        }
        for i, (c, lab) in enumerate(
            [(c, "yes") for c in SUPPORTED] + [(c, "no") for c in UNSUPPORTED]
        )
    ]
    rows += [
        {"dimension": "answer_relevancy", "question": QUESTION, "answer": a, "label": lab}
        for a, lab in [
            ("She won the Physics prize in 1903 and the Chemistry prize in 1911; born 1867.", 1),
            ("Curie won Nobel Prizes in 1903 and 1911 and was born in 1867 in Warsaw.", 1),
            ("The Nobel Prizes in Physics (1903) and Chemistry (1911); she was born in 1867.", 1),
            ("She received two Nobel Prizes, in 1903 and 1911, and her birth year is 1867.", 1),
            ("Marie Curie won the 1903 Physics and 1911 Chemistry Nobels; born in 1867.", 1),
            ("I don't know.", 0),
            ("Bananas are yellow.", 0),
            ("Curie was a scientist.", 0),
            ("Paris is the capital of France.", 0),
            ("She liked science.", 0),
        ]
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_bundled_params_load_and_are_versioned() -> None:
    params = load_params()
    assert params.version
    assert set(params.models) == set(MODEL_FEATURES)
    raw = json.loads(DEFAULT_PARAMS.read_text())
    assert raw["schema_version"] == 1 and raw["version"] == params.version
    assert OfflineFaithfulnessJudge().version.endswith(f"+{params.version}")
    broken = dict(raw, models={k: v for k, v in raw["models"].items() if k != "support"})
    with pytest.raises(ValueError, match="support"):
        Params.model_validate(broken)


def test_missing_params_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_params(tmp_path / "nope.json")


def test_fit_judges_cli_refits_and_judges_load_the_result(tmp_path: Path) -> None:
    labels = _labels(tmp_path / "labels.jsonl")
    out = tmp_path / "params" / "mine.json"
    result = CliRunner().invoke(
        app, ["fit-judges", "--labels", str(labels), "--out", str(out), "--version", "mine-1"]
    )
    assert result.exit_code == 0, result.output
    params = load_params(out)
    assert params.version == "mine-1"
    assert set(params.provenance["fitted_models"]) == {"support", "relevancy"}
    assert params.models["aspect"] == load_params().models["aspect"]  # kept from the base
    support = params.models["support"]
    assert support.cv["n"] == 12 and support.cv["auroc"] > 0.8
    assert support.coef != load_params().models["support"].coef

    judge = OfflineFaithfulnessJudge(params=out)
    assert judge.version.endswith("+mine-1")

    async def check() -> None:
        good = await judge.judge(
            JudgeInput(id="a", question=QUESTION, answer=SUPPORTED[0], contexts=[CONTEXT])
        )
        bad = await judge.judge(
            JudgeInput(id="b", question=QUESTION, answer=UNSUPPORTED[0], contexts=[CONTEXT])
        )
        assert good.evidence.features["mean_support"] > bad.evidence.features["mean_support"]

    import asyncio

    asyncio.run(check())


def test_env_var_selects_params(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.json"
    load_params().model_copy(update={"version": "env-7"}).save(path)
    monkeypatch.setenv("RAGJUDGE_OFFLINE_PARAMS", str(path))
    assert OfflineFaithfulnessJudge().version.endswith("+env-7")


def test_bad_label_rows_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = {"dimension": "answer_relevancy", "question": "q?", "answer": "a", "label": 1}
    path.write_text(json.dumps(good) + "\n" + json.dumps(good | {"label": "maybe"}) + "\n")
    with pytest.raises(DataError, match=r"bad\.jsonl:2: bad label"):
        read_labels(path)
    csv_path = tmp_path / "bad.csv"
    csv_path.write_text("dimension,question,answer,label\nrelevance,q?,a,1\n")
    with pytest.raises(DataError, match=r"bad\.csv:2: unknown dimension"):
        read_labels(csv_path)
    assert [parse_label(v) for v in ("yes", "0", 0.7, "4", "2", True)] == [1, 0, 1, 1, 0, 1]


def test_fit_logistic_folds_threshold_into_intercept() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    y = (x[:, 0] + 0.3 * rng.normal(size=200) > 0.8).astype(int)
    model = fit_logistic(x, y, ["a", "b"], decision=True)
    assert model.cv["auroc"] > 0.9
    pred = model.proba(x) >= 0.5
    assert (pred == y).mean() >= model.cv["accuracy"] - 0.05
