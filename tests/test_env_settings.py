"""Every ``RAGJUDGE_*`` variable is validated like the config file (issue 30 §9): a
non-finite or out-of-range number is refused before any work, with one line naming the
variable and its value."""

from __future__ import annotations

import json
from typing import Any

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
    ("OPENAI_BASE_URL", "http://[::1"),
    ("OPENAI_BASE_URL", "127.0.0.1:8080/v1"),
    ("OPENAI_BASE_URL", "ftp://host/v1"),
    ("RAGJUDGE_BASE_URL", "http://127.0.0.1:port/v1"),
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


def test_a_base_url_that_does_not_parse_fails_no_other_command(tmp_path, capsys, monkeypatch):
    """Every error line passes through the redaction, which reads the base URL's credentials:
    a value that did not parse made even ``metrics`` end in a traceback (exit 1)."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://[::1")
    with pytest.raises(SystemExit) as exc:
        main(["metrics", "--qrels", str(tmp_path / "nope"), "--run", str(tmp_path / "nope")])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and "nope" in err, err


PRECEDENCE = [
    # (setting, environment variable, its value there, an explicit value)
    ("model", "RAGJUDGE_MODEL", "env-model", "flag-model"),
    ("timeout", "RAGJUDGE_TIMEOUT", "7", 9.0),
    ("max_concurrency", "RAGJUDGE_MAX_CONCURRENCY", "3", 5),
    ("max_attempts", "RAGJUDGE_MAX_ATTEMPTS", "2", 4),
    ("structured_mode", "RAGJUDGE_STRUCTURED", "tools", "prompt"),
    ("max_tokens", "RAGJUDGE_MAX_TOKENS", "100", 200),
]


@pytest.mark.parametrize(("field", "var", "env_value", "explicit"), PRECEDENCE)
def test_one_precedence_for_every_llm_setting(
    monkeypatch: pytest.MonkeyPatch, field: str, var: str, env_value: str, explicit: Any
) -> None:
    """flag or argument > RAGJUDGE_* > OPENAI_* > default; an unset flag (None) never
    overrides the environment (docs/llm.md, "Precedence")."""
    from ragjudge.llm.settings import LLMSettings

    monkeypatch.delenv(var, raising=False)
    default = getattr(LLMSettings(), field)
    assert getattr(LLMSettings.from_env(**{field: None}), field) == default
    monkeypatch.setenv(var, env_value)
    from_env = getattr(LLMSettings.from_env(**{field: None}), field)
    assert from_env not in (default, explicit)
    assert str(from_env).removesuffix(".0") == env_value
    assert getattr(LLMSettings.from_env(**{field: explicit}), field) == explicit


def test_concurrency_and_coverage_floor_follow_the_same_precedence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragjudge.judges.coverage import DEFAULT_COVERAGE_FLOOR, coverage_floor
    from ragjudge.llm.settings import LLMSettings, resolve_concurrency

    monkeypatch.delenv("RAGJUDGE_MAX_CONCURRENCY", raising=False)
    monkeypatch.delenv("RAGJUDGE_MIN_COVERAGE", raising=False)
    assert resolve_concurrency(None) == LLMSettings().max_concurrency
    assert coverage_floor() == DEFAULT_COVERAGE_FLOOR
    monkeypatch.setenv("RAGJUDGE_MAX_CONCURRENCY", "3")
    monkeypatch.setenv("RAGJUDGE_MIN_COVERAGE", "0.8")
    assert resolve_concurrency(None) == 3 and resolve_concurrency(5) == 5
    assert coverage_floor() == 0.8
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("RAGJUDGE_BASE_URL", "http://127.0.0.1:2/v1")
    assert LLMSettings.from_env().base_url == "http://127.0.0.1:2/v1"  # RAGJUDGE_* > OPENAI_*
