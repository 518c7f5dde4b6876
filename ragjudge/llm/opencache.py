"""Where a client's LLM cache lives: the cache a Ray worker installed (``use_cache``), else
``RAGJUDGE_LLM_CACHE_URL`` if set, else ``<RAGJUDGE_HOME>/cache.sqlite``. The variable takes a
file path or ``sqlite:///PATH`` (``ragjudge.llm.cache.LLMCache``, a SQLite file), or
``postgresql://USER:PASSWORD@HOST/DB`` (``ragjudge.llm.servercache.ServerCache``: a table
``llm_cache`` in that database, e.g. the team's run store, so that a call paid once is served
to every machine); anything else is a ``ConfigError`` naming the variable, password redacted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragjudge.errors import ConfigError
from ragjudge.home import state_path
from ragjudge.llm.cache import CallCache, LLMCache
from ragjudge.userconfig import setting

if TYPE_CHECKING:
    from ragjudge.llm.servercache import ServerCache

_PROCESS_CACHE: list[CallCache] = []


def use_cache(cache: CallCache) -> None:
    """Make ``cache`` the default cache of every client built afterwards in this process."""
    _PROCESS_CACHE[:] = [cache]


CACHE_ENV = "RAGJUDGE_LLM_CACHE_URL"


def default_cache() -> CallCache:
    """The process's cache (``use_cache``), else ``open_cache()``."""
    return _PROCESS_CACHE[0] if _PROCESS_CACHE else open_cache()


def cache_location() -> str:
    """Where ``open_cache()`` finds the cache: ``RAGJUDGE_LLM_CACHE_URL``, else the file."""
    return setting(CACHE_ENV) or str(state_path("cache.sqlite"))


def open_cache(where: str | Path | None = None) -> LLMCache | ServerCache:
    """The cache at ``where`` (default ``cache_location()``; module docstring). A server cache
    is opened once per URL in a process (it holds a connection pool)."""
    where = where if where is not None and str(where).strip() else cache_location()
    if isinstance(where, Path) or "://" not in where:
        return LLMCache(where)
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from ragjudge.llm.settings import redact, register_secret

    try:
        url = make_url(where)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number ('[::1/db')
        raise ConfigError(f"{CACHE_ENV}: not a database URL: {redact(where)}") from None
    register_secret(url.password if isinstance(url.password, str) else None)
    backend = url.get_backend_name()
    if backend == "sqlite" and url.database:
        return LLMCache(url.database)
    if backend != "postgresql":
        raise ConfigError(
            f"{CACHE_ENV}={redact(where)}: unknown database {backend!r}; use a file path, "
            "sqlite:///PATH or a postgresql:// URL (docs/store.md)"
        )
    from ragjudge.llm.servercache import ServerCache

    key = url.render_as_string(hide_password=False)
    for opened in _SERVER_CACHES:
        if opened.url == key:
            return opened
    cache = ServerCache(url.set(drivername="postgresql+psycopg"))
    _SERVER_CACHES.append(cache)
    return cache


_SERVER_CACHES: list[ServerCache] = []
