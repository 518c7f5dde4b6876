"""The config file ``ragjudge.toml`` and one precedence everywhere: flag (or argument) >
``RAGJUDGE_*`` environment > config file > default; an unset flag never overrides the
environment (docs/llm.md, "Configuration")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragjudge.cli import main
from ragjudge.errors import ConfigError
from ragjudge.llm import LLMSettings
from ragjudge.testing.server import FakeLLMServer

VARS = [
    "RAGJUDGE_CONFIG",
    "RAGJUDGE_MODEL",
    "RAGJUDGE_TIMEOUT",
    "RAGJUDGE_MAX_CONCURRENCY",
    "RAGJUDGE_STRUCTURED",
    "RAGJUDGE_MAX_TOKENS",
    "RAGJUDGE_RPM",
    "RAGJUDGE_MIN_COVERAGE",
    "RAGJUDGE_STORE_URL",
    "RAGJUDGE_LLM_CACHE_URL",
    "RAGJUDGE_BASE_URL",
    "OPENAI_BASE_URL",
    "RAGJUDGE_API_KEY",
    "OPENAI_API_KEY",
]


@pytest.fixture
def clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory and home of its own, no variable of the settings below set."""
    for name in VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAGJUDGE_HOME", str(tmp_path / "home"))
    return tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


FIELDS = [
    # (setting, variable, file value (TOML), its value, env value, flag value)
    ("model", "RAGJUDGE_MODEL", '"file-model"', "file-model", "env-model", "flag-model"),
    ("timeout", "RAGJUDGE_TIMEOUT", "11.5", 11.5, "7", 9.0),
    ("max_concurrency", "RAGJUDGE_MAX_CONCURRENCY", "6", 6, "3", 5),
    ("structured_mode", "RAGJUDGE_STRUCTURED", '"json_object"', "json_object", "tools", "prompt"),
    ("max_tokens", "RAGJUDGE_MAX_TOKENS", "300", 300, "100", 200),
    ("rpm", "RAGJUDGE_RPM", "600", 600, "60", 120),
]


@pytest.mark.parametrize(("field", "var", "toml", "in_file", "env", "flag"), FIELDS)
def test_flag_beats_env_beats_file_beats_default(
    clean: Path,
    monkeypatch: pytest.MonkeyPatch,
    field: str,
    var: str,
    toml: str,
    in_file: Any,
    env: str,
    flag: Any,
) -> None:
    default = getattr(LLMSettings(), field)
    assert getattr(LLMSettings.from_env(**{field: None}), field) == default
    write(clean / "ragjudge.toml", f"[llm]\n{field} = {toml}\n")
    assert getattr(LLMSettings.from_env(**{field: None}), field) == in_file != default
    monkeypatch.setenv(var, env)
    assert str(getattr(LLMSettings.from_env(**{field: None}), field)).removesuffix(".0") == env
    assert getattr(LLMSettings.from_env(**{field: flag}), field) == flag


def test_the_other_settings_follow_it_too(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragjudge.judges.coverage import DEFAULT_COVERAGE_FLOOR, coverage_floor
    from ragjudge.llm.opencache import cache_location
    from ragjudge.llm.settings import resolve_concurrency
    from ragjudge.store.open import store_url

    assert coverage_floor() == DEFAULT_COVERAGE_FLOOR
    assert str(store_url()).endswith("runs.sqlite")
    write(
        clean / "ragjudge.toml",
        '[llm]\nmax_concurrency = 6\ncache_url = "/x/cache.sqlite"\n'
        '[judges]\nmin_coverage = 0.9\n[store]\nurl = "/x/runs.sqlite"\n',
    )
    assert coverage_floor() == 0.9 and resolve_concurrency(None) == 6
    assert (cache_location(), store_url()) == ("/x/cache.sqlite", "/x/runs.sqlite")
    assert store_url("/flag.sqlite") == "/flag.sqlite"
    monkeypatch.setenv("RAGJUDGE_MIN_COVERAGE", "0.2")
    monkeypatch.setenv("RAGJUDGE_MAX_CONCURRENCY", "2")
    monkeypatch.setenv("RAGJUDGE_STORE_URL", "/env/runs.sqlite")
    assert coverage_floor() == 0.2 and resolve_concurrency(None) == 2
    assert resolve_concurrency(4) == 4 and store_url() == "/env/runs.sqlite"


def test_where_the_file_is_found(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragjudge.llm.settings import endpoint_env
    from ragjudge.userconfig import config_path

    assert config_path() is None and not LLMSettings.configured()
    in_home = write(clean / "home" / "ragjudge.toml", '[llm]\nmodel = "home"\n')
    assert config_path() == in_home and LLMSettings.from_env().model == "home"
    write(clean / "ragjudge.toml", '[llm]\nmodel = "cwd"\nbase_url = "http://127.0.0.1:9/v1"\n')
    assert LLMSettings.from_env().model == "cwd" and LLMSettings.configured()
    # a Ray worker, in whatever folder, is handed the same file
    assert endpoint_env()["RAGJUDGE_CONFIG"] == str((clean / "ragjudge.toml").resolve())
    named = write(clean / "elsewhere.toml", '[llm]\nmodel = "named"\n')
    monkeypatch.setenv("RAGJUDGE_CONFIG", str(named))
    assert LLMSettings.from_env().model == "named"
    monkeypatch.setenv("RAGJUDGE_CONFIG", str(clean / "missing.toml"))
    with pytest.raises(ConfigError, match=r"RAGJUDGE_CONFIG=.*missing\.toml: no such file"):
        LLMSettings.from_env()


def test_the_file_is_read_once_per_version(clean: Path) -> None:
    """Values and their lines come from one reading of the file, kept while its modification
    time and size stay the same; a new version is read again."""
    import os

    from ragjudge.userconfig import llm_values

    path = write(clean / "ragjudge.toml", '[llm]\nmodel = "aa"\nseed = 1\n')
    first = llm_values()
    assert first == (
        {"model": "aa", "seed": 1},
        {
            "model": f"{path.resolve()}:2: [llm] model",
            "seed": f"{path.resolve()}:3: [llm] seed",
        },
    )
    stat = path.stat()
    write(path, '[llm]\nseed = 1\nmodel = "aa"\n')  # same size, lines swapped
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert llm_values() == first  # not read again
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert llm_values()[1]["model"].endswith(":3: [llm] model")


BAD_FILES = [
    ('[llm]\nmodel = "m"\ntemprature = 0.5\n', 3, "[llm] temprature: unknown key"),
    ('[llm]\nmodel = "m"\ntemperature = 7\n', 3, "[llm] temperature = 7"),
    ("[llm]\n\nmax_concurrency = 0\n", 3, "[llm] max_concurrency = 0: "),
    ('[llm]\nstructured_mode = "jsonn"\n', 2, "[llm] structured_mode: "),
    ('[llm]\nadaptive = "maybe"\n', 2, "[llm] adaptive: "),
    ("[judges]\nmin_coverage = 1.5\n", 2, "[judges] min_coverage: "),
    ('[llm]\nmodel = "m"\n[lm]\nmodel = "x"\n', 1, "lm: unknown key (known: llm, judges, store)"),
    ('[llm]\nmodel = "m"\napi_key = "sk-file-secret"\n', 3, "RAGJUDGE_API_KEY or OPENAI_API_KEY"),
    ('[llm]\nmodel = "m\n', None, "not valid TOML"),
]


@pytest.mark.parametrize(("text", "line", "says"), BAD_FILES)
def test_a_bad_file_is_one_line_naming_the_file_line_and_key(
    clean: Path, capsys: pytest.CaptureFixture[str], text: str, line: int | None, says: str
) -> None:
    path = write(clean / "ragjudge.toml", text)
    with pytest.raises(ConfigError) as exc:
        LLMSettings.from_env()
    msg = str(exc.value)
    assert says in msg and "\n" not in msg, msg
    assert msg.startswith(f"{path.resolve()}:{line}: " if line else str(path.resolve())), msg
    assert "sk-file-secret" not in msg
    plan = write(clean / "plan.jsonl", '{"messages": [{"role": "user", "content": "hi"}]}\n')
    with pytest.raises(SystemExit) as code:
        main(["llm", "dry-run", str(plan)])
    err = capsys.readouterr().err.strip()
    assert code.value.code == 2 and len(err.splitlines()) == 1 and says in err, err


def test_sweep_yaml_concurrency_is_a_file_level(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep YAML's ``concurrency`` sits with the config file: the environment beats it,
    it beats ``ragjudge.toml`` and the default; ``ragjudge.sweep(concurrency=)`` is the flag."""
    from ragjudge.sweep.config import load_config

    yaml = write(clean / "sweep.yaml", "dataset: {path: .}\nconcurrency: 3\n")
    plain = write(clean / "plain.yaml", "dataset: {path: .}\n")
    assert load_config(plain).concurrency == LLMSettings().max_concurrency
    assert load_config(yaml).concurrency == 3
    write(clean / "ragjudge.toml", "[llm]\nmax_concurrency = 6\n")
    assert (load_config(plain).concurrency, load_config(yaml).concurrency) == (6, 3)
    monkeypatch.setenv("RAGJUDGE_MAX_CONCURRENCY", "2")
    assert (load_config(plain).concurrency, load_config(yaml).concurrency) == (2, 2)
    write(clean / "bad.yaml", "dataset: {path: .}\nconcurrency: 0\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml:2: concurrency"):
        load_config(clean / "bad.yaml")


def test_judge_flag_env_and_file_reach_the_endpoint(
    clean: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ragjudge judge``: calls in flight at the server, as each level sets them (new rows
    each time: the cache would answer repeated ones)."""
    with FakeLLMServer(latency=0.15) as srv:
        write(
            clean / "ragjudge.toml",
            f'[llm]\nbase_url = "{srv.base_url}"\nmodel = "m"\nmax_concurrency = 3\n'
            "backoff_initial = 0.01\n",
        )

        def run(tag: str, *flags: str) -> int:
            rows = write(
                clean / f"{tag}.jsonl",
                "".join(
                    f'{{"id": "r{i}", "question": "What is {tag} {i}?", "answer": "{tag} {i} is '
                    f'a lamp.", "contexts": ["{tag} {i} is a lamp."]}}\n'
                    for i in range(10)
                ),
            )
            srv.reset()
            args = ["judge", "-i", str(rows), "--judges", "answer_relevancy", "--no-progress"]
            try:
                main([*args, *flags])
            except SystemExit as exc:
                assert exc.code in (0, None), exc.code
            return int(srv.stats()["max_in_flight"])

        assert run("a") == 3  # the file
        monkeypatch.setenv("RAGJUDGE_MAX_CONCURRENCY", "2")
        assert run("b") == 2  # the environment beats the file; the unset flag does not
        assert run("c", "--concurrency", "4") == 4  # the flag beats both


def test_the_file_takes_what_each_variable_takes() -> None:
    """The tables accept the values their variables accept: the judges' precisions, and every
    ``LLMSettings`` field but the key (plus the cache's location)."""
    from typing import get_args

    from ragjudge.embedding import PRECISIONS
    from ragjudge.userconfig import JudgesTable, LLMTable

    choices, _none = get_args(JudgesTable.model_fields["precision"].annotation)
    assert set(get_args(choices)) == set(PRECISIONS)
    assert set(LLMTable.model_fields) - {"cache_url"} == set(LLMSettings.model_fields) - {"api_key"}
