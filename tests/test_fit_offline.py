"""Fitted parameters: the bundled file loads and is versioned; ``fit-judges`` refits on a tiny
labels file and writes a params file that the judges then load; bad label rows are located."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragjudge.calibrate.labels import load_labels
from ragjudge.cli import app
from ragjudge.errors import ConfigError, DataError
from ragjudge.judges.offline import OfflineFaithfulnessJudge
from ragjudge.judges.offline.embed import EmbeddingCache
from ragjudge.judges.offline.features import (
    FEATURE_SIGNS,
    RULE_FEATURES,
    SHORT_RELEVANCY_FEATURES,
    SHORT_SUPPORT_FEATURES,
)
from ragjudge.judges.offline.fit import (
    LabelRow,
    fit_logistic,
    parse_label,
    read_labels,
    row_features,
)
from ragjudge.judges.offline.params import (
    DEFAULT_PARAMS,
    MODEL_FEATURES,
    PRIOR_PARAMS,
    LogisticModel,
    Params,
    load_params,
)
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
    assert set(params.models) == set(MODEL_FEATURES) | {"short_relevancy", "short_support"}
    raw = json.loads(DEFAULT_PARAMS.read_text())
    assert raw["schema_version"] == 1 and raw["version"] == params.version
    assert OfflineFaithfulnessJudge().version.endswith(f"+{params.version}.{params.digest}")
    # a refit saved under the same version name is another judge version (no stale cache hits)
    support = params.models["support"]
    other = params.model_copy(
        update={
            "models": params.models
            | {"support": support.model_copy(update={"intercept": support.intercept + 1})}
        }
    )
    assert other.version == params.version and other.digest != params.digest
    assert OfflineFaithfulnessJudge(params=other).version != OfflineFaithfulnessJudge().version
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
    assert "+mine-1." in judge.version

    async def check() -> None:
        good = await judge.judge(
            JudgeInput(id="a", question=QUESTION, answer=SUPPORTED[0], contexts=[CONTEXT])
        )
        bad = await judge.judge(
            JudgeInput(id="b", question=QUESTION, answer=UNSUPPORTED[0], contexts=[CONTEXT])
        )
        assert good.score > bad.score

    import asyncio

    asyncio.run(check())


def test_env_var_selects_params(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.json"
    load_params().model_copy(update={"version": "env-7"}).save(path)
    monkeypatch.setenv("RAGJUDGE_OFFLINE_PARAMS", str(path))
    assert "+env-7." in OfflineFaithfulnessJudge().version
    path.write_text('{"version": 3}')
    with pytest.raises(ConfigError, match=r"p\.json: not offline judge parameters \(") as err:
        OfflineFaithfulnessJudge()
    assert "\n" not in str(err.value)


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


def test_what_a_label_row_needs_is_what_its_judge_reads(tmp_path: Path) -> None:
    """The offline judge of a row's dimension declares what it reads (answer, contexts,
    reference); a row without it is an error at its line."""
    path = tmp_path / "rows.jsonl"
    cases = [
        ({"dimension": "faithfulness", "answer": "A."}, "faithfulness needs contexts"),
        ({"dimension": "context_recall", "contexts": ["c"]}, "context_recall needs a reference"),
        ({"dimension": "completeness", "answer": " "}, "completeness needs an answer"),
    ]
    for row, message in cases:
        path.write_text(json.dumps({"question": "Q?", "label": 1} | row) + "\n")
        with pytest.raises(DataError, match=rf"rows\.jsonl:1: {message}"):
            read_labels(path)
    path.write_text(json.dumps({"question": "Q?", "label": 1, "dimension": "context_precision",
                                "contexts": ["c"]}) + "\n")  # fmt: skip
    assert read_labels(path)[0].dimension == "context_precision"


def test_labels_are_read_as_agree_reads_them(tmp_path: Path) -> None:
    """fit-judges reads a label file through ``io.rows.label_rows``: a quote left open
    is an error at the row's first line (it used to swallow the next row into a cell), and a
    CSV with another suffix is still CSV."""
    head = "dimension,question,answer,label\n"
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(head + 'answer_relevancy,"q?,a,1\nanswer_relevancy,q2?,a,0\n')
    with pytest.raises(DataError, match=r"sheet\.csv:2: malformed CSV: .*quote left open"):
        read_labels(sheet)
    sheet.write_text(head + 'answer_relevancy,"Why,\nthen?",a,1\nrelevance,q?,a,1\n')
    with pytest.raises(DataError, match=r"sheet\.csv:4: unknown dimension"):
        read_labels(sheet)
    txt = tmp_path / "labels.txt"
    txt.write_text("item_id," + head + "q1@k1,answer_relevancy,q?,a,1\n")
    assert [r.question for r in read_labels(txt)] == ["q?"]
    assert load_labels(txt).labels[0].dimension == "answer_relevancy"


def test_fit_logistic_folds_threshold_into_intercept() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    y = (x[:, 0] + 0.3 * rng.normal(size=200) > 0.8).astype(int)
    model = fit_logistic(x, y, ["a", "b"], decision=True)
    assert model.cv["auroc"] > 0.9
    pred = model.proba(x) >= 0.5
    assert (pred == y).mean() >= model.cv["accuracy"] - 0.05


def _noisy_design(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """Feature 0 carries the label, feature 1 is anti-correlated with it, feature 2 is noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = np.column_stack([y + rng.normal(0, 0.8, n), -y + rng.normal(0, 0.8, n), rng.normal(size=n)])
    return x, y


def _prior(coef: list[float]) -> LogisticModel:
    return LogisticModel(
        features=["a", "b", "c"], coef=coef, intercept=0.0, mean=[0.0] * 3, scale=[1.0] * 3
    )


def test_fit_keeps_signs_and_fixed_features() -> None:
    x, y = _noisy_design(0)
    model = fit_logistic(
        x,
        y,
        ["a", "b", "c"],
        prior=_prior([1.0, 0.5, 0.0]),
        signs={"a": 1, "b": 1},
        fixed=frozenset({"c"}),
    )
    # b's data says "negative", its sign says ">= 0": it stops at 0; c is held at 0.
    assert model.coef[0] > 0.5 and model.coef[1] == 0.0 and model.coef[2] == 0.0
    free = fit_logistic(x, y, ["a", "b", "c"], prior=_prior([1.0, 0.5, 0.0]))
    assert free.coef[1] < -0.1  # without the bound the data's sign wins
    assert model.cv["prior_log_loss"] > model.cv["log_loss"]


def test_labels_that_agree_with_the_prior_keep_it() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 3))
    prior = _prior([1.0, -1.0, 0.5])
    y = (rng.random(300) < prior.proba(x)).astype(int)  # drawn from the prior itself
    model = fit_logistic(x, y, ["a", "b", "c"], prior=prior, decision=False)
    # No lambda beats strong shrinkage by a standard error: the one-SE rule keeps the prior.
    assert model.cv["lambda"] >= 1.0
    assert np.allclose(model.coef, prior.coef, atol=0.2)
    loose = fit_logistic(x, y, ["a", "b", "c"], decision=False)  # shrunk towards zero instead
    assert (
        np.abs(np.array(loose.coef) - prior.coef).max()
        > np.abs(np.array(model.coef) - prior.coef).max()
    )


def test_weights_change_the_fit_and_bad_weights_are_located(tmp_path: Path) -> None:
    x, y = _noisy_design(2, n=200)
    w = np.where(np.arange(200) < 100, 1.0, 1e-3)  # the second half barely counts
    x2 = x.copy()
    x2[100:, 0] = -x2[100:, 0]  # ... and it says the opposite about feature a
    light = fit_logistic(x2, y, ["a", "b", "c"], weights=w)
    even = fit_logistic(x2, y, ["a", "b", "c"])
    assert light.coef[0] > even.coef[0] + 0.3
    path = tmp_path / "w.jsonl"
    row = {"dimension": "answer_relevancy", "question": "q?", "answer": "a", "label": 1}
    path.write_text(
        json.dumps(row | {"weight": 2}) + "\n" + json.dumps(row | {"weight": -1}) + "\n"
    )
    with pytest.raises(DataError, match=r"w\.jsonl:2: bad weight"):
        read_labels(path)
    path.write_text(json.dumps(row | {"weight": "2.5"}) + "\n")
    assert read_labels(path)[0].weight == 2.5


def test_bundled_params_are_fitted_not_hand_set() -> None:
    params = load_params()
    optional = {"short_relevancy", "short_support"}
    assert set(params.provenance["fitted_models"]) == set(MODEL_FEATURES) | optional
    for name, model in params.models.items():
        assert model.cv["n"] > 50, name  # fitted on labelled rows, with CV figures
        for feature, coef in zip(model.features, model.coef, strict=True):
            sign = FEATURE_SIGNS[name][feature]
            assert coef * sign >= 0, (name, feature)
        for feature in RULE_FEATURES.get(name, ()):
            assert model.coef[model.features.index(feature)] == 0.0


def test_prior_is_hand_set_and_loads() -> None:
    prior = load_params(PRIOR_PARAMS)
    assert prior.version == "v0-hand" and "fitted_models" not in prior.provenance
    assert prior.version != load_params().version


def test_fragment_answers_fit_their_own_relevancy_model() -> None:
    base = load_params(PRIOR_PARAMS)
    q = "Where was Marie Curie born?"
    fragment = LabelRow("answer_relevancy", q, 1, answer="Warsaw")
    sentence = LabelRow("answer_relevancy", q, 1, answer="She was born in Warsaw in 1867.")
    name, vec = row_features(fragment, base, EmbeddingCache())
    assert name == "short_relevancy" and len(vec) == len(SHORT_RELEVANCY_FEATURES)
    assert row_features(sentence, base, EmbeddingCache())[0] == "relevancy"
    models = {k: v for k, v in base.models.items() if k != "short_relevancy"}
    bare = base.model_copy(update={"models": models})
    name, vec = row_features(fragment, bare, EmbeddingCache())
    assert name == "relevancy" and len(vec) == len(bare.models["relevancy"].features)


def test_short_answer_faithfulness_labels_fit_the_short_support_model() -> None:
    base = load_params(PRIOR_PARAMS)
    q = "Where was Marie Curie born?"
    row = LabelRow("faithfulness", q, 1, answer="Warsaw", contexts=[CONTEXT])
    name, vec = row_features(row, base, EmbeddingCache())
    assert name == "short_support" and len(vec) == len(SHORT_SUPPORT_FEATURES)
    assert vec[SHORT_SUPPORT_FEATURES.index("ans_cov")] == 1.0  # "Warsaw" is in the context
    claim = LabelRow("faithfulness", q, 1, answer="She was born in Warsaw.", contexts=[CONTEXT])
    assert row_features(claim, base, EmbeddingCache())[0] == "support"
    recall = LabelRow("context_recall", q, 1, contexts=[CONTEXT], reference="Warsaw")
    assert row_features(recall, base, EmbeddingCache())[0] == "short_support"
    models = {k: v for k, v in base.models.items() if k != "short_support"}
    bare = base.model_copy(update={"models": models})
    with pytest.raises(ValueError, match="short_support"):
        row_features(row, bare, EmbeddingCache())  # skipped by featurise, not mis-filed


def test_url_only_citations_are_no_evidence() -> None:
    from ragjudge.judges.offline.labelsets import evidence_passages

    raw = [
        "[3] https://example.org/page\n\nThe tower is 330 metres tall.",
        "[7] https://x.org/a",
        "",
    ]
    assert evidence_passages(raw) == ("The tower is 330 metres tall.",)
    assert evidence_passages(["[1] https://only.url/"]) == ()
