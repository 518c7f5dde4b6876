"""Judge registry: judges are named, so a config file can list them and users can add their own.

``@register_judge("faithfulness", "offline")`` on a factory (a class or function returning a
``Judge``); ``create_judge("faithfulness", "offline", **options)`` builds one.
``JUDGE_NAMES`` are the five built-ins; any other registered name works the same way.
What a judge reads and whether it derives smaller k from k_max are its own declarations
(``ragjudge.protocols.Judge``), never its name.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ragjudge.errors import ConfigError
from ragjudge.judges.base import conform
from ragjudge.protocols import Judge

JUDGE_NAMES = (
    "faithfulness",
    "answer_relevancy",
    "completeness",
    "context_recall",
    "context_precision",
)
"""The built-in judges, in report order."""

F = TypeVar("F", bound=Callable[..., Any])

_REGISTRY: dict[tuple[str, str], Callable[..., Judge]] = {}


def register_judge(name: str, backend: str) -> Callable[[F], F]:
    def deco(factory: F) -> F:
        _REGISTRY[(name, backend)] = factory
        return factory

    return deco


BUILTIN_BACKENDS = ("offline", "llm", "ragas", "cascade")  # cascade last: it joins the others
"""Backends whose judges ship with ragjudge, each registered by its module
``ragjudge.judges.<backend>``."""


def _load_builtins(backend: str | None = None) -> None:
    """Import the built-in module of ``backend`` (every built-in one when None or not built in),
    which registers its judges: an offline run never imports the LLM judges. A missing
    optional extra (ragas) is skipped."""
    wanted = (backend,) if backend in BUILTIN_BACKENDS else BUILTIN_BACKENDS
    for module in (f"ragjudge.judges.{m}" for m in wanted):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith(("ragas", "langchain")):
                raise


def registered(name: str, backend: str) -> bool:
    """``name`` has a judge on ``backend`` (loading that backend's built-ins only)."""
    _load_builtins(backend)
    return (name, backend) in _REGISTRY


def available() -> dict[str, list[str]]:
    """Registered judge names -> their backends."""
    _load_builtins()
    out: dict[str, list[str]] = {}
    for name, backend in sorted(_REGISTRY):
        out.setdefault(name, []).append(backend)
    return out


def default_backend() -> str:
    """``llm`` when an endpoint is configured (``OPENAI_BASE_URL`` / ``RAGJUDGE_BASE_URL``),
    else ``offline``."""
    from ragjudge.llm.settings import LLMSettings

    return "llm" if LLMSettings.configured() else "offline"


def build_judges(
    names: Sequence[str],
    backend: str,
    concurrency: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> list[Judge]:
    """The named judges of ``backend``; those whose factory takes a client (``takes_client``)
    get one each (own connection pool; shared ledger, cache and endpoint concurrency limit,
    ``concurrency`` or else ``RAGJUDGE_MAX_CONCURRENCY``).
    ``options`` are keyword options for every factory (the cascade's band). Every name is
    checked before any client is built."""
    for name in names:
        if registered(name, backend):
            continue
        known = available()
        if name not in known:
            raise ConfigError(f"unknown judge {name!r}; known judges: {', '.join(sorted(known))}")
        raise ConfigError(
            f"judge {name!r} has no {backend!r} backend; it has: {', '.join(known[name])}"
        )
    wants = [takes_client(name, backend) for name in names]
    clients: list[Any] = []
    if any(wants):
        from ragjudge.llm import judge_clients

        clients = judge_clients(sum(wants), max_concurrency=concurrency)
    given = iter(clients)
    return [
        create_judge(name, backend, **(options or {}), **({"client": next(given)} if want else {}))
        for name, want in zip(names, wants, strict=True)
    ]


def takes_client(name: str, backend: str) -> bool:
    """The registered factory of ``name`` on ``backend`` takes an LLM ``client`` (the judge
    calls an LLM, so a run gives it a client of the run's endpoint, ledger and cache)."""
    _load_builtins(backend)
    factory = _REGISTRY.get((name, backend))
    return factory is not None and "client" in inspect.signature(factory).parameters


def create_judge(name: str, backend: str, **options: Any) -> Judge:
    """Build a registered judge; an unknown name or backend lists the known ones."""
    _load_builtins(backend)
    factory = _REGISTRY.get((name, backend))
    if factory is None:
        known = available()
        if name not in known:
            raise ConfigError(
                f"unknown judge {name!r}; known judges: {', '.join(sorted(known)) or 'none'}"
            )
        raise ConfigError(
            f"judge {name!r} has no {backend!r} backend; it has: {', '.join(known[name])}"
        )
    params = inspect.signature(factory).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(options) - set(params))
        if unknown:
            raise ConfigError(
                f"judge {name!r} on backend {backend!r} takes no option {', '.join(unknown)}"
            )
    return conform(factory(**options))


def option_problem(
    name: str, backend: str, options: Mapping[str, Any]
) -> tuple[str | None, str] | None:
    """Why ``create_judge(name, backend, **options)`` would refuse ``options`` before building
    anything: (the option at fault, or None for them all, the reason); None when it would take
    them, or when only building can tell. Reads the factory's signature and its
    ``options_model`` (a pydantic model the options must fit, when the factory declares one)."""
    from pydantic import BaseModel, ValidationError

    _load_builtins(backend)
    factory = _REGISTRY.get((name, backend))
    if factory is None:
        return None
    params = inspect.signature(factory).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(options) - set(params))
        if unknown:
            return unknown[0], f"judge {name!r} on backend {backend!r} takes no option {unknown[0]}"
    model = getattr(factory, "options_model", None)
    if isinstance(model, type) and issubclass(model, BaseModel):
        try:
            model(**options)
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(map(str, err["loc"])) or None
            return key, str(err["msg"]).removeprefix("Value error, ")
    return None


def import_plugins(modules: list[str]) -> None:
    """Import user modules that register their own judges (``--plugin``;
    ``ragjudge.adapters.import_user_module``: the working directory is importable, as it is for
    ``python -m``, so a ``my_judges.py`` beside the data needs no ``PYTHONPATH``; a module that
    fails to import is one ``ConfigError`` naming it and where)."""
    from ragjudge.adapters import import_user_module

    for module in modules:
        import_user_module(module, f"plugin {module!r}")
