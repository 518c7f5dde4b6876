"""Every ``RAGJUDGE_*`` variable is validated like the config file (issue 30 §9): a
non-finite or out-of-range number is refused before any work, with one line naming the
variable and its value."""

from __future__ import annotations

import json

import pytest

from ragjudge.cli import main
from ragjudge.errors import ConfigError
from ragjudge.llm import LLMSettings

BAD = [
    ("RAGJUDGE_TEMPERATURE", "nan"),
    ("RAGJUDGE_TEMPERATURE", "inf"),
    ("RAGJUDGE_TEMPERATURE", "-1"),
    ("RAGJUDGE_TEMPERATURE", "7"),
    ("RAGJUDGE_TIMEOUT", "inf"),
    ("RAGJUDGE_TIMEOUT", "nan"),
    ("RAGJUDGE_BACKOFF", "inf"),
    ("RAGJUDGE_BACKOFF_MAX", "nan"),
    ("RAGJUDGE_MAX_TOKENS", "0"),
    ("RAGJUDGE_CONTEXT_WINDOW", "-5"),
    ("RAGJUDGE_SEED", "1.5"),
    ("RAGJUDGE_MAX_CONCURRENCY", "0"),
    ("RAGJUDGE_ADAPTIVE_CONCURRENCY", "maybe"),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_a_bad_number_in_the_environment_is_refused_naming_the_variable(name, value, monkeypatch):
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as exc:
        LLMSettings.from_env()
    text = str(exc.value)
    assert f"{name}={value}" in text and "\n" not in text, text


def test_good_values_in_the_environment_still_work(monkeypatch):
    for name, value in [
        ("RAGJUDGE_TEMPERATURE", "0.7"),
        ("RAGJUDGE_TIMEOUT", "12.5"),
        ("RAGJUDGE_SEED", "3"),
        ("RAGJUDGE_ADAPTIVE_CONCURRENCY", "off"),
    ]:
        monkeypatch.setenv(name, value)
    s = LLMSettings.from_env()
    assert (s.temperature, s.timeout, s.seed, s.adaptive) == (0.7, 12.5, 3, False)


def test_the_cli_refuses_a_nan_temperature_with_one_line(tmp_path, capsys, monkeypatch):
    plan = tmp_path / "plan.jsonl"
    plan.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    monkeypatch.setenv("RAGJUDGE_TEMPERATURE", "nan")
    with pytest.raises(SystemExit) as exc:
        main(["llm", "dry-run", str(plan)])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1, err
    assert "RAGJUDGE_TEMPERATURE=nan" in err
