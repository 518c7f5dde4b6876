"""The registry of sweep executors: ``kind`` (the config's ``executor.kind``) -> the import path
of a class meeting ``ragjudge.sweep.execute.Executor`` with a ``build`` classmethod taking
``build_executor``'s arguments, and optionally a ``prepare(config)`` classmethod, called before
the run is stored (``prepare_executor``).

The sweep asks this registry, never a list of kinds, so it imports no executor it does not
use (the Ray one loads Ray) and an executor of one's own is one ``register_executor`` call.
This module imports nothing of ragjudge: the config validates ``executor.kind`` against it.
"""

from __future__ import annotations

import importlib
from typing import Any

EXECUTORS: dict[str, str] = {
    "inprocess": "ragjudge.sweep.execute:InProcessExecutor",
    "ray": "ragjudge.distributed.executor:RayExecutor",
}


def register_executor(kind: str, path: str) -> None:
    """Make ``executor: {kind: KIND}`` use the class at ``path`` (``module:Class``)."""
    EXECUTORS[kind] = path


def executor_class(kind: str) -> Any:
    """The executor class registered as ``kind`` (imported now)."""
    module, _, name = EXECUTORS[kind].partition(":")
    return getattr(importlib.import_module(module), name)
