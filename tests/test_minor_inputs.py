"""The minor inputs of issue 30 §12: a planned call whose message has no content is refused at
its line; k above the corpus size and a bad generator option name the config file and line."""

from __future__ import annotations

import json

import pytest

from ragjudge.cli import main
from ragjudge.errors import ConfigError
from ragjudge.schema import Document, TestCase, TestSet
from ragjudge.sweep.config import load_config
from ragjudge.sweep.data import check_ks


def test_dry_run_refuses_a_message_without_content_at_its_line(tmp_path, capsys):
    plan = tmp_path / "plan.jsonl"
    good = {"messages": [{"role": "user", "content": "hello"}]}
    plan.write_text(json.dumps(good) + "\n" + json.dumps({"messages": [{"role": "user"}]}) + "\n")
    with pytest.raises(SystemExit) as exc:
        main(["llm", "dry-run", str(plan), "--model", "gpt-4o-mini"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1, err
    assert f"{plan}:2" in err and "content" in err


def test_k_above_the_corpus_size_names_the_line_of_ks(tmp_path):
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(
        f"dataset: {{path: {tmp_path}}}\ngenerator: {{kind: extractive}}\nks:\n  - 1\n  - 100000\n"
    )
    testset = TestSet(
        name="t",
        documents=[Document(id="d1", text="Tin is mined in Bolivia.")],
        cases=[TestCase(id="q1", question="Where is tin mined?", relevant={"d1": 1})],
    )
    with pytest.raises(ConfigError) as exc:
        check_ks(load_config(cfg), testset)
    assert str(exc.value).startswith(f"{cfg}:5: ks.1: k = 100000 is above"), exc.value


def test_a_bad_generator_option_names_file_line_and_key(tmp_path):
    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(
        f"dataset: {{path: {tmp_path}}}\n"
        "generator:\n  kind: extractive\n  options:\n    max_sentences: 0\n"
    )
    with pytest.raises(ConfigError) as exc:
        load_config(cfg)
    text = str(exc.value)
    assert text.startswith(f"{cfg}:5: generator.options.max_sentences: "), text
    assert "at least 1" in text
