"""Configuration of the LLM layer: endpoint, model, key, sampling defaults, limits.

Precedence: explicit overrides > ``RAGJUDGE_*`` variables > ``OPENAI_*`` variables > the config
file's ``[llm]`` table (``ragjudge.userconfig``) > defaults.
The API key is a ``SecretStr``: it is never printed, logged, cached or stored (``repr`` and
``safe_dict`` hide it). Credentials written into the base URL (``https://user:key@host/v1``)
are used for the connection only: every printed or stored form is ``display_url``. Error text
from outside (an endpoint's reply, an exception of a generator or judge) passes through
``redact``, which also removes the keys themselves, wherever they appear.
"""

from __future__ import annotations

import base64
import os
import re
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    field_validator,
)

from ragjudge import userconfig
from ragjudge.errors import ConfigError

OPENAI_URL = "https://api.openai.com/v1"
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0", "host.docker.internal"}
NO_KEY = "sk-no-key-required"
"""Placeholder sent to local endpoints that need no key (the SDK insists on one)."""

StructuredMode = Literal["auto", "json_schema", "json_object", "tools", "prompt"]

_ENV: dict[str, tuple[str, ...]] = {
    "base_url": ("RAGJUDGE_BASE_URL", "OPENAI_BASE_URL"),
    "api_key": ("RAGJUDGE_API_KEY", "OPENAI_API_KEY"),
    "model": ("RAGJUDGE_MODEL",),
    "temperature": ("RAGJUDGE_TEMPERATURE",),
    "seed": ("RAGJUDGE_SEED",),
    "max_tokens": ("RAGJUDGE_MAX_TOKENS",),
    "timeout": ("RAGJUDGE_TIMEOUT",),
    "max_concurrency": ("RAGJUDGE_MAX_CONCURRENCY",),
    "max_attempts": ("RAGJUDGE_MAX_ATTEMPTS",),
    "context_window": ("RAGJUDGE_CONTEXT_WINDOW",),
    "structured_mode": ("RAGJUDGE_STRUCTURED",),
    "adaptive": ("RAGJUDGE_ADAPTIVE_CONCURRENCY",),
    "backoff_initial": ("RAGJUDGE_BACKOFF",),
    "backoff_max": ("RAGJUDGE_BACKOFF_MAX",),
    "rpm": ("RAGJUDGE_RPM",),
    "tpm": ("RAGJUDGE_TPM",),
}


def endpoint_env() -> dict[str, str]:
    """The set variables that configure the LLM layer (``RAGJUDGE_*``/``OPENAI_*`` above, the
    key among them): what a worker process needs to reach the same endpoint the same way.
    Holds the secret: hand it to a process directly, never print or store it. The config file
    in use is named by ``RAGJUDGE_CONFIG``, so a worker in another folder reads the same one."""
    env = {n: os.environ[n] for names in _ENV.values() for n in names if os.environ.get(n)}
    path = userconfig.config_path()
    if path is not None:
        env[userconfig.CONFIG_ENV] = str(path.resolve())
    return env


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")
"""A URL's user info, up to the last ``@`` before its path (a password may hold ``@``)."""
_HOST = r"(?:\[|localhost\b|\d{1,3}(?:\.\d{1,3}){3}\b|(?:[\w-]+\.)+[A-Za-z][\w-]*\b|[\w-]+:\d+\b)"
"""What follows the ``@`` of credentials: a host name with a domain, ``localhost``, an IPv4 or
IPv6 address, or ``name:port``: not a bare word, so that a component's ``module:func@digest``
(a run's identity) is not taken for ``user:password@host``."""
_BARE_USERINFO = re.compile(r"(?<![\w/:@.-])[\w.~%!$&'()*+,;=-]+:[^\s/@]+@(?=" + _HOST + ")")
"""``user:password@host`` written without a scheme."""
_SECRET_PARAM = re.compile(
    r"(?i)([?&#](?:[\w.-]*(?:key|token|secret|password|passwd|sig|signature|auth)[\w.-]*)=)[^&#\s]+"
)
"""A query parameter that carries a credential (``?api-key=...``, ``&sig=...``)."""
_SECRETS: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember ``value`` (an API key, a URL password) so that ``redact`` removes it from any
    text; values shorter than 4 characters are not secrets worth matching."""
    if value and len(value) >= 4 and value != NO_KEY:
        _SECRETS.add(value)


def _url_secrets(url: str) -> None:
    """Register a base URL's password, its ``user:password`` and that pair as HTTP Basic sends it
    (base64), which an endpoint may echo back in an error; each as written in the URL and
    percent-decoded (``PW%21`` is sent as ``PW!``). A URL that does not parse (``http://[::1``)
    registers what stands between ``://`` and the last ``@`` (the redaction of URLs hides it
    wherever it is printed as a URL)."""
    full = url if "://" in url else f"http://{url}"
    try:
        parts = urlparse(full)
        user, password = parts.username or "", parts.password
    except ValueError:  # not a URL: the credentials, if any, by the user-info pattern alone
        found = re.match(r"[^:]*://([^/?#\s]*)@", full)
        user, _, password = found[1].partition(":") if found else ("", "", None)
    if not password:
        return
    for u, pw in {(user, password), (unquote(user), unquote(password))}:
        userinfo = f"{u}:{pw}"
        for value in (pw, userinfo, base64.b64encode(userinfo.encode()).decode()):
            register_secret(value)


def _masked(m: re.Match[str]) -> str:
    """A URL's user info as ``***``; one masked already (``user:***``) keeps its user name."""
    userinfo = m.group(0)[len(m.group(1)) : -1]
    if userinfo.endswith(":***") and "@" not in userinfo:
        return m.group(0)
    return f"{m.group(1)}***@"


def redact_url(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced: ``https://user:key@host/v1``
    -> ``https://***@host/v1`` (a password holding ``@`` too, and ``user:key@host`` without a
    scheme), and credential query values (``?api-key=...``) -> ``?api-key=***``. Used wherever
    a base URL is printed or stored (settings shown by ``llm check``, endpoint names in errors,
    ledgers and limiter keys, error lines)."""
    text = _USERINFO.sub(_masked, text)
    text = _BARE_USERINFO.sub("***@", text)
    return _SECRET_PARAM.sub(r"\1***", text)


def redact(text: str) -> str:
    """``redact_url(text)`` with every secret this process knows removed besides: the API keys
    and base-URL credentials of the environment and of every ``LLMSettings`` made (registered
    when made), also as HTTP Basic encodes them. What every error line, stored error and log
    passes through: an endpoint may echo the key in its error body."""
    for names in (_ENV["api_key"], _ENV["base_url"]):
        for name in names:
            value = os.environ.get(name)
            if value and name in _ENV["api_key"]:
                register_secret(value)
            elif value:
                _url_secrets(value)
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, "***")
    return redact_url(text)


def error_text(exc: BaseException, limit: int = 2000) -> str:
    """``"Type: message"`` of an exception raised by a part the run does not control (a
    generator, a judge, ragas, LangChain), ``redact``ed and cut to ``limit`` characters: the form
    stored in a result's ``error``."""
    return redact(f"{type(exc).__name__}: {exc}")[:limit]


_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _switch(name: str, raw: str) -> bool:
    """An on/off variable's value; anything else is a ``ConfigError`` naming it."""
    if raw.lower() in _ON:
        return True
    if raw.lower() in _OFF:
        return False
    raise ConfigError(f"{name}={raw}: expected one of {', '.join(_ON + _OFF)}; fix or unset it")


def resolve_concurrency(flag: int | None, file_value: int | None = None) -> int:
    """Calls in flight for a command or API call: the flag (or argument) when given, else
    ``RAGJUDGE_MAX_CONCURRENCY``, else ``file_value`` (a sweep YAML's ``concurrency``), else
    the config file's ``[llm] max_concurrency``, else the default of
    ``LLMSettings.max_concurrency``: an unset flag never overrides the environment, and the
    environment beats every file."""
    if flag is not None:
        return flag
    if file_value is not None and not (os.environ.get("RAGJUDGE_MAX_CONCURRENCY") or "").strip():
        return file_value
    return LLMSettings.from_env().max_concurrency


def _is_local(url: str) -> bool:
    host = (urlparse(url).hostname or "").lower()
    return host in LOCAL_HOSTS or host.endswith(".local") or host.startswith("127.")


class LLMSettings(BaseModel):
    """Everything the client needs to reach one OpenAI-compatible endpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str = OPENAI_URL
    api_key: SecretStr | None = None
    model: str = "gpt-4o-mini"
    temperature: float = Field(0.0, ge=0, le=2, allow_inf_nan=False)
    seed: int | None = 0
    max_tokens: int | None = Field(2048, ge=1)
    timeout: float = Field(60.0, gt=0, allow_inf_nan=False)
    """Seconds per HTTP attempt."""
    max_concurrency: int = Field(8, ge=1)
    """User cap on requests in flight per endpoint; the adaptive limit stays within it."""
    adaptive: bool = True
    """Additive increase / multiplicative decrease of the limit on 429 and overload."""
    max_attempts: int = Field(6, ge=1)
    """HTTP attempts per request (first try plus retries)."""
    backoff_initial: float = Field(0.5, ge=0, allow_inf_nan=False)
    backoff_max: float = Field(30.0, ge=0, allow_inf_nan=False)
    max_retry_after: float = Field(120.0, ge=0, allow_inf_nan=False)
    """Longest ``Retry-After`` honoured; longer waits are capped to this."""
    context_window: int | None = Field(None, ge=1)
    """Tokens the model accepts; when set, over-long prompts fail before anything is sent."""
    rpm: int | None = Field(None, ge=1)
    """Requests per minute the endpoint allows; requests are paced to stay within it (one
    pace per endpoint per process, or per cluster on the Ray executor). None: no pacing."""
    tpm: int | None = Field(None, ge=1)
    """Tokens per minute (prompt estimate + ``max_tokens`` per request), paced likewise."""
    structured_mode: StructuredMode = "auto"
    """``auto`` tries json_schema, json_object with the schema, a forced tool call, then
    prompt-only, and remembers per endpoint and model what works (``ragjudge.llm.modes``)."""

    _base_url_from: str = PrivateAttr("base_url")
    """Where ``base_url`` was set, for error lines (``base_url_origin``)."""

    @field_validator("base_url")
    @classmethod
    def _a_url(cls, value: str) -> str:
        """An http(s) URL with a host (``http://host:port/v1``): a value that is not one fails
        here, naming where it came from, not at the first call."""
        try:
            parts = urlparse(value.strip())
            parts.port  # noqa: B018 (raises on a port that is not a number)
        except ValueError as exc:
            raise ValueError(f"not a valid URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("not an http(s) URL with a host, e.g. http://localhost:8000/v1")
        return value

    @classmethod
    def from_env(cls, **overrides: Any) -> LLMSettings:
        """Settings from the environment over the config file's ``[llm]`` table; ``overrides``
        (non-None) win. A value is checked (a number finite and in range, a switch one of
        ``1/0/true/false/yes/no/on/off``); a bad one raises ``ConfigError`` naming the variable
        and its value (``RAGJUDGE_TEMPERATURE=nan: ...``) or the file, line and key."""
        values, in_file = userconfig.llm_values()
        source: dict[str, str] = {}
        for field, names in _ENV.items():
            for name in names:
                raw = os.environ.get(name)
                if raw is not None and raw.strip() != "":
                    values[field] = raw.strip()
                    source[field] = name
                    break
        if "adaptive" in values:
            values["adaptive"] = _switch(source["adaptive"], str(values["adaptive"]))
        given = {k: v for k, v in overrides.items() if v is not None}
        values.update(given)
        if isinstance(values.get("api_key"), str):
            values["api_key"] = SecretStr(values["api_key"])
        try:
            settings = cls(**values)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = str(err["loc"][0]) if err["loc"] else "?"
            msg = str(err["msg"]).removeprefix("Value error, ")
            if field in source and field not in given and field != "api_key":
                name = source[field]
                value = redact(os.environ[name].strip())
                raise ConfigError(f"{name}={value}: {msg}; fix the value or unset {name}") from None
            if field in in_file and field not in given:
                raise ConfigError(f"{in_file[field]} = {values[field]!r}: {msg}") from None
            raise ConfigError(f"invalid LLM setting {field}: {msg}") from None
        if "base_url" in given:
            settings._base_url_from = "the base_url given for this run"
        elif "base_url" in source:
            settings._base_url_from = source["base_url"]
        elif "base_url" in in_file:
            settings._base_url_from = in_file["base_url"]
        else:
            settings._base_url_from = "OPENAI_BASE_URL (unset: OpenAI's own URL is used)"
        return settings

    @property
    def base_url_origin(self) -> str:
        """Where ``base_url`` was set, as an error line names it: the variable
        (``OPENAI_BASE_URL``), the config file's ``PATH:LINE: [llm] base_url``, an override, or
        that none was set; ``base_url`` for settings made directly."""
        return self._base_url_from

    @staticmethod
    def configured() -> bool:
        """True when an endpoint is configured (a base URL or a key in the environment, or a
        ``base_url`` in the config file); callers use it to choose LLM judges over the offline
        defaults."""
        return (
            any(
                (os.environ.get(name) or "").strip()
                for names in (_ENV["base_url"], _ENV["api_key"])
                for name in names
            )
            or "base_url" in userconfig.llm_values()[0]
        )

    def model_post_init(self, context: Any, /) -> None:
        """Register the key and the URL credentials with ``redact``."""
        if self.api_key is not None:
            register_secret(self.api_key.get_secret_value())
        _url_secrets(self.base_url)

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            yield name, (self.display_url if name == "base_url" else value)

    @property
    def display_url(self) -> str:
        """The base URL without its credentials (``redact_url``): the form to print or store."""
        return redact_url(self.base_url)

    @property
    def is_local(self) -> bool:
        return _is_local(self.base_url)

    def key_value(self) -> str:
        """The key to send; local endpoints without one get a placeholder. A remote endpoint
        without a key raises ``ConfigError``."""
        if self.api_key is not None and self.api_key.get_secret_value():
            return self.api_key.get_secret_value()
        if self.is_local:
            return NO_KEY
        raise ConfigError(
            f"no API key for the LLM endpoint {self.display_url}: set OPENAI_API_KEY "
            "(or RAGJUDGE_API_KEY), or point OPENAI_BASE_URL at a local server "
            "(vLLM, Ollama, llama.cpp, LiteLLM); without either, ragjudge runs offline judges"
        )

    def safe_dict(self) -> dict[str, Any]:
        """The settings without the key or URL credentials (for manifests and logs)."""
        out = self.model_dump(exclude={"api_key"})
        out["base_url"] = self.display_url
        out["api_key_set"] = self.api_key is not None
        return out
