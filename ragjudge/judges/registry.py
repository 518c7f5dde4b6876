"""Judge registry: judges are named, so a config file can list them and users can add their own.

``@register_judge("faithfulness", "offline")`` on a factory (a class or function returning a
``Judge``); ``create_judge("faithfulness", "offline", **options)`` builds one.
``JUDGE_NAMES`` are the five built-ins; any other registered name works the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ragjudge.errors import ConfigError
from ragjudge.protocols import Judge

JUDGE_NAMES = (
    "faithfulness",
    "answer_relevancy",
    "completeness",
    "context_recall",
    "context_precision",
)
"""The built-in judges, in report order."""

PREFIX_JUDGES = frozenset({"context_recall", "context_precision"})
"""Judges that depend only on the contexts and the reference: judged once at the largest k,
derived at every smaller k from the prefix of their evidence."""

F = TypeVar("F", bound=Callable[..., Any])

_REGISTRY: dict[tuple[str, str], Callable[..., Judge]] = {}


def register_judge(name: str, backend: str) -> Callable[[F], F]:
    def deco(factory: F) -> F:
        _REGISTRY[(name, backend)] = factory
        return factory

    return deco


def _load_builtins() -> None:
    # Importing the backends registers their judges. Missing optional extras are skipped.
    import importlib

    for module in ("ragjudge.judges.offline", "ragjudge.judges.llm", "ragjudge.judges.ragas"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith(("ragas", "langchain")):
                raise


def available() -> dict[str, list[str]]:
    """Registered judge names -> their backends."""
    _load_builtins()
    out: dict[str, list[str]] = {}
    for name, backend in sorted(_REGISTRY):
        out.setdefault(name, []).append(backend)
    return out


def create_judge(name: str, backend: str, **options: Any) -> Judge:
    """Build a registered judge; an unknown name or backend lists the known ones."""
    _load_builtins()
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
    return factory(**options)
