"""The user's config file, ``ragjudge.toml``: the level between the environment and the
defaults. One precedence everywhere: command-line flag (or Python argument) > ``RAGJUDGE_*``
(and ``OPENAI_*``) environment > config file > default; an unset flag never overrides the
environment.

Where: ``$RAGJUDGE_CONFIG`` when set (the file must exist), else ``ragjudge.toml`` in the working
directory, else ``ragjudge.toml`` in the state folder (``$RAGJUDGE_HOME``, else ``.ragjudge/``).
The first found is the only one read; files are not merged. Its tables::

    [llm]        # the fields of ragjudge.llm.LLMSettings (base_url, model, temperature, seed,
                 # max_tokens, timeout, max_concurrency, structured_mode, rpm, tpm, ...) and
    cache_url    # RAGJUDGE_LLM_CACHE_URL
    [judges]
    min_coverage    # RAGJUDGE_MIN_COVERAGE
    offline_params  # RAGJUDGE_OFFLINE_PARAMS (a relative path is read from the file's folder)
    precision       # RAGJUDGE_JUDGE_PRECISION
    [store]
    url             # RAGJUDGE_STORE_URL

No API key in the file: ``[llm] api_key`` is refused with one line naming the variables to use
(a file is easily committed or shared; the environment is where secrets go). A password in
``base_url`` is registered with ``redact`` as the environment's is (``LLMSettings``), and every
printed URL is masked (``redact_url``).
A bad file is one ``ConfigError`` line: ``PATH:LINE: [table] key: problem``.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from ragjudge.errors import ConfigError
from ragjudge.home import home_path

CONFIG_ENV = "RAGJUDGE_CONFIG"
FILE_NAME = "ragjudge.toml"


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LLMTable(_Table):
    """``[llm]``: the ``LLMSettings`` fields but the key (types here; ranges are checked by
    ``LLMSettings`` itself, with the file's line in the message), and the cache's location."""

    base_url: str | None = None
    model: str | None = None
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    max_concurrency: int | None = None
    adaptive: StrictBool | None = None
    max_attempts: int | None = None
    backoff_initial: float | None = None
    backoff_max: float | None = None
    max_retry_after: float | None = None
    context_window: int | None = None
    rpm: int | None = None
    tpm: int | None = None
    structured_mode: Literal["auto", "json_schema", "json_object", "tools", "prompt"] | None = None
    cache_url: str | None = None


class JudgesTable(_Table):
    min_coverage: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    offline_params: str | None = None
    precision: Literal["auto", "onnx", "bf16", "fp32"] | None = None


class StoreTable(_Table):
    url: str | None = None


class UserConfig(_Table):
    """The whole file; every table optional."""

    llm: LLMTable = Field(default_factory=LLMTable)
    judges: JudgesTable = Field(default_factory=JudgesTable)
    store: StoreTable = Field(default_factory=StoreTable)


ENV_KEYS: dict[str, tuple[str, str]] = {
    "RAGJUDGE_MIN_COVERAGE": ("judges", "min_coverage"),
    "RAGJUDGE_OFFLINE_PARAMS": ("judges", "offline_params"),
    "RAGJUDGE_JUDGE_PRECISION": ("judges", "precision"),
    "RAGJUDGE_LLM_CACHE_URL": ("llm", "cache_url"),
    "RAGJUDGE_STORE_URL": ("store", "url"),
}
"""The variables outside ``LLMSettings`` that the file can set: variable -> (table, key)."""


def config_path() -> Path | None:
    """The config file in use (module docstring), or None when there is none."""
    given = (os.environ.get(CONFIG_ENV) or "").strip()
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise ConfigError(f"{CONFIG_ENV}={given}: no such file; fix the path or unset it")
        return path
    for path in (Path.cwd() / FILE_NAME, home_path() / FILE_NAME):
        if path.is_file():
            return path
    return None


def load_config() -> tuple[UserConfig, Path | None]:
    """The config file's settings (all None without a file) and its path."""
    path = config_path()
    if path is None:
        return UserConfig(), None
    return _read(path).config, path


class _File(NamedTuple):
    """A config file as read: its settings and, per ``[llm]`` value set, ``PATH:LINE: [llm]
    key`` for error lines."""

    config: UserConfig
    llm_where: dict[str, str]


def _read(path: Path) -> _File:
    """``path`` read once per process per version: cached on its resolved path, modification
    time and size, so a file written again (or another file, by ``$RAGJUDGE_CONFIG`` or the
    working directory) is read again."""
    stat = path.stat()
    return _load(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int, size: int) -> _File:
    """Read and validate ``path`` (``_read`` gives the cache key)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc}") from None
    llm = data.get("llm")
    if isinstance(llm, dict) and "api_key" in llm:
        raise ConfigError(
            f"{path}:{key_line(text, 'llm', 'api_key')}: [llm] api_key: no keys in the config "
            "file; set RAGJUDGE_API_KEY or OPENAI_API_KEY in the environment instead"
        )
    try:
        config = UserConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err["loc"]]
        table, key = (loc[0], loc[1]) if len(loc) > 1 else ("", loc[0] if loc else "?")
        where = f"[{table}] {key}" if table else key
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            known = list(_TABLES) if not table else list(_TABLES[table].model_fields)
            msg = f"unknown key (known: {', '.join(known)})"
        line = key_line(text, table, key)
        raise ConfigError(f"{path}:{line}: {where}: {msg}") from None
    llm_where = {
        k: f"{path}:{key_line(text, 'llm', k)}: [llm] {k}"
        for k in config.llm.model_dump(exclude_none=True)
    }
    return _File(config, llm_where)


_TABLES: dict[str, type[BaseModel]] = {"llm": LLMTable, "judges": JudgesTable, "store": StoreTable}


def key_line(text: str, table: str, key: str) -> int:
    """The 1-based line of ``key`` in ``[table]`` of a TOML text (of ``[table]`` itself when the
    key is not found, 1 when neither is)."""
    current, header = "", 0
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        match = re.match(r"^\[\s*([\w.-]+)\s*\]", stripped)
        if match:
            current = match.group(1)
            if current == table:
                header = n
        elif current == table and re.match(rf"^[\"']?{re.escape(key)}[\"']?\s*[=.]", stripped):
            return n
    return header or 1


def file_setting(var: str) -> str | None:
    """The config file's value for the variable ``var`` (a key of ``ENV_KEYS``), as text; a
    relative ``offline_params`` path is taken from the file's folder. None when unset."""
    config, path = load_config()
    table, key = ENV_KEYS[var]
    value = getattr(getattr(config, table), key)
    if value is None:
        return None
    if var == "RAGJUDGE_OFFLINE_PARAMS" and path is not None:
        return str(path.parent / Path(str(value)).expanduser())
    return str(value)


def setting(var: str) -> str | None:
    """``var`` from the environment when set (not blank), else from the config file: the lookup
    every reader of the variables in ``ENV_KEYS`` uses."""
    raw = (os.environ.get(var) or "").strip()
    return raw or file_setting(var)


def llm_values() -> tuple[dict[str, Any], dict[str, str]]:
    """The ``[llm]`` values set in the file (``LLMSettings`` fields only) and, per field,
    ``PATH:LINE: [llm] key`` for error lines."""
    path = config_path()
    if path is None:
        return {}, {}
    file = _read(path)
    values = file.config.llm.model_dump(exclude_none=True, exclude={"cache_url"})
    return values, {k: file.llm_where[k] for k in values}
