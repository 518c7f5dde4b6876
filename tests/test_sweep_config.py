"""The sweep config: validation with named errors, defaults, and the definition hash."""

from __future__ import annotations

import pytest

from ragjudge.errors import ConfigError
from ragjudge.sweep.config import (
    SweepConfig,
    diff_definitions,
    load_config,
    parse_config,
    stored_config,
)


def write(tmp_path, text: str):
    p = tmp_path / "sweep.yaml"
    p.write_text(text)
    return p


def test_defaults_and_relative_dataset_path(tmp_path):
    (tmp_path / "data").mkdir()
    cfg = load_config(write(tmp_path, "dataset: {path: data}\n"))
    assert cfg.ks == list(range(1, 11)) and cfg.k_max == 10
    assert cfg.dataset.path == str((tmp_path / "data").resolve())
    assert cfg.judges.backend == "offline" and len(cfg.judges.names) == 5
    assert cfg.retriever.kind == "hybrid" and cfg.generator.kind == "extractive"


@pytest.mark.parametrize(
    ("ks", "message"),
    [
        ("[0, 1, 2]", "k must be a positive integer; got 0"),
        ("[3, -1]", "k must be a positive integer; got -1"),
        ("[1, 2, 2, 3, 3]", "duplicate k values: 2, 3"),
        ("[]", "ks"),
    ],
)
def test_bad_k_lists(tmp_path, ks, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, f"dataset: {{path: .}}\nks: {ks}\n"))


def test_unknown_keys_are_named(tmp_path):
    text = "dataset: {path: ., splt: test}\nretriver: {kind: bm25}\nbudget: {max_call: 3}\n"
    with pytest.raises(ConfigError) as exc:
        load_config(write(tmp_path, text))
    msg = str(exc.value)
    assert "unknown key 'retriver'" in msg
    assert "unknown key 'dataset.splt'" in msg
    assert "unknown key 'budget.max_call'" in msg
    assert "sweep.yaml" in msg


def test_other_bad_input(tmp_path):
    with pytest.raises(ConfigError, match="line 2"):
        load_config(write(tmp_path, "dataset: {path: .}\nks: [1, 2\n"))
    with pytest.raises(ConfigError, match="cannot read sweep config"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(ConfigError, match="mapping"):
        parse_config([1, 2])
    with pytest.raises(ConfigError, match="judge listed more than once: faithfulness"):
        parse_config({"dataset": {"path": "."}, "judges": {"names": ["faithfulness"] * 2}})
    with pytest.raises(ConfigError, match=r"retriever\.kind"):
        parse_config({"dataset": {"path": "."}, "retriever": {"kind": "tfidf"}})
    with pytest.raises(ConfigError, match="negative objective weight for completeness"):
        parse_config({"dataset": {"path": "."}, "objective": {"weights": {"completeness": -1}}})


def test_definition_hash_ignores_execution_settings_and_location():
    base = {"dataset": {"path": "/a"}, "ks": [1, 2, 3]}
    a = SweepConfig.model_validate(base)
    b = SweepConfig.model_validate(
        base | {"dataset": {"path": "/b"}, "concurrency": 2, "budget": {"max_calls": 5}}
    )
    assert a.definition_hash() == b.definition_hash()
    c = SweepConfig.model_validate(base | {"ks": [3, 2, 1, 4]})
    assert c.ks == [1, 2, 3, 4]
    assert c.definition_hash() != a.definition_hash()
    assert diff_definitions(a.definition(), c.definition()) == ["ks: [1, 2, 3] -> [1, 2, 3, 4]"]
    d = SweepConfig.model_validate(base | {"generator": {"kind": "chat"}})
    assert diff_definitions(a.definition(), d.definition()) == [
        'generator.kind: "extractive" -> "chat"'
    ]


def test_reranker_keep_is_checked_and_hashes_only_when_set():
    base = {"dataset": {"path": "/a"}, "rerankers": [{"spec": "late-interaction", "depth": 20}]}
    plain = SweepConfig.model_validate(base)
    assert plain.definition()["rerankers"] == [{"spec": "late-interaction", "depth": 20}]
    kept = SweepConfig.model_validate(
        base | {"rerankers": [{"spec": "late-interaction", "depth": 20, "keep": 0.4}]}
    )
    assert kept.definition()["rerankers"][0]["keep"] == 0.4
    assert kept.definition_hash() != plain.definition_hash()
    with pytest.raises(ConfigError, match="keep applies to a reranker"):
        parse_config(
            {"dataset": {"path": "."}, "rerankers": [{"spec": "prune", "depth": 5, "keep": 0.5}]}
        )
    with pytest.raises(ConfigError, match="keep"):
        parse_config(
            {"dataset": {"path": "."}, "rerankers": [{"spec": "llm", "depth": 5, "keep": 2}]}
        )


def test_a_stored_config_is_validated_as_a_file_is(tmp_path, capsys, _isolated_home):
    """``sweep --resume`` reads a run's stored configuration through ``stored_config``: one that
    this version does not accept is an error naming the run, never an internal error."""
    from ragjudge.schema import RunManifest
    from ragjudge.store import open_store
    from tests.test_exit_codes import run_cli

    (tmp_path / "sweep.yaml").write_text("dataset: {path: .}\nks: [1, 2]\n")
    full = load_config(tmp_path / "sweep.yaml").model_dump(mode="json")

    def stored(run_id: str, config: dict) -> RunManifest:
        return RunManifest(
            run_id=run_id, dataset_name="d", dataset_hash="d" * 16, config_hash="c" * 16,
            config=config, ragjudge_version="0.0.1", started_at="2026-01-01T00:00:00+00:00",
        )  # fmt: skip

    assert stored_config(stored("ok", {"full": full})).ks == [1, 2]
    with pytest.raises(ConfigError, match=r"^run none: its manifest holds no sweep config"):
        stored_config(stored("none", {}))
    with open_store() as store:
        store.create_run(stored("20260101-old", {"full": full | {"retired_option": 1}}))
    code, text = run_cli(["sweep", "--resume", "20260101-old"], capsys)
    assert code == 2 and "Traceback" not in text and "internal error" not in text
    assert "run 20260101-old (its stored configuration): unknown key 'retired_option'" in text


@pytest.mark.parametrize("value", [".inf", ".nan", "-.inf"])
def test_a_number_that_is_not_finite_is_refused(tmp_path, value):
    path = tmp_path / "sweep.yaml"
    path.write_text(
        f"dataset: {{path: .}}\nks: [1, 2]\nobjective:\n  weights: {{faithfulness: {value}}}\n"
    )
    with pytest.raises(ConfigError, match=r"sweep\.yaml:4: objective\.weights\.faithfulness: "):
        load_config(path)


def test_a_judge_name_the_registry_lacks_is_named_at_its_line(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(
        "dataset: {path: .}\nks: [1, 2]\njudges:\n  names: [faithfulness,\n    faithfulnes]\n"
    )
    with pytest.raises(ConfigError, match=r"sweep\.yaml:5: judges\.names: no judge 'faithfulnes' "
                       r"on backend 'offline'; did you mean 'faithfulness'\?"):  # fmt: skip
        load_config(path)


def test_an_unknown_reranker_is_named_before_its_other_keys(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text("dataset: {path: .}\nks: [1, 2]\nrerankers: [{spec: bogus-reranker}]\n")
    with pytest.raises(ConfigError, match=r"sweep\.yaml:3: rerankers\.0: spec: unknown reranker "):
        load_config(path)
