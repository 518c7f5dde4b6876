"""ragjudge: end-to-end evaluation of retrieval-augmented generation with LLM judges.

The public API (docs/api.md); everything else is internal and may change:

- ``evaluate(data, judges=..., backend=...)`` -> ``EvaluationResult``: judge rows of
  question / answer / contexts (list of dicts, DataFrame, Hugging Face Dataset, file).
- ``sweep(testset, retriever=..., generator=..., judges=..., ks=...)`` -> ``SweepResult``:
  a stored, resumable k-sweep of your own retriever and generator (functions welcome).
- ``compare(run, baseline, thresholds=...)`` -> ``Report``; ``agree(run, labels)`` ->
  ``AgreementReport``: the nightly regression report and the agreement with human labels.
- ``judge`` (decorator), ``JudgeBase``, ``CriteriaJudge``: your own judges.
- ``open_store(url)`` -> ``RunStore``: the run store (SQLite file, or a PostgreSQL URL), the
  Protocol every stored run is read and written through (docs/store.md).
- the types users touch: ``TestCase``, ``TestSet``, ``Document``, ``JudgeInput``,
  ``JudgeResult``, ``JudgeStatus``, ``Evidence``, ``Aggregate``, and the Protocols ``Judge``,
  ``Retriever``, ``Generator``.

``import ragjudge`` imports none of them: each is imported on first use (PEP 562), so the
import stays cheap and torch, sentence-transformers and openai load only when a part needs them.
``ragjudge.sweep`` is both this function and the ``ragjudge.sweep`` package: calling it runs
the function, its attributes are the package's (``ragjudge.sweep.run``).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "evaluate": "ragjudge.api.evaluate",
    "EvaluationResult": "ragjudge.api.evaluate",
    "SweepResult": "ragjudge.api.sweep",
    "compare": "ragjudge.api.reports",
    "agree": "ragjudge.api.reports",
    "judge": "ragjudge.judges.custom",
    "JudgeBase": "ragjudge.judges.base",
    "CriteriaJudge": "ragjudge.judges.llm.criteria",
    "Aggregate": "ragjudge.schema",
    "Answer": "ragjudge.schema",
    "Document": "ragjudge.schema",
    "Evidence": "ragjudge.schema",
    "JudgeInput": "ragjudge.schema",
    "JudgeResult": "ragjudge.schema",
    "JudgeStatus": "ragjudge.schema",
    "TestCase": "ragjudge.schema",
    "TestSet": "ragjudge.schema",
    "Generator": "ragjudge.protocols",
    "Judge": "ragjudge.protocols",
    "Retriever": "ragjudge.protocols",
    "open_store": "ragjudge.store",
    "RunStore": "ragjudge.store",
}

if TYPE_CHECKING:
    from ragjudge.api.evaluate import EvaluationResult, evaluate
    from ragjudge.api.reports import agree, compare
    from ragjudge.api.sweep import SweepResult
    from ragjudge.api.sweep import sweep as sweep
    from ragjudge.judges.base import JudgeBase
    from ragjudge.judges.custom import judge
    from ragjudge.judges.llm.criteria import CriteriaJudge
    from ragjudge.protocols import Generator, Judge, Retriever
    from ragjudge.schema import (
        Aggregate,
        Answer,
        Document,
        Evidence,
        JudgeInput,
        JudgeResult,
        JudgeStatus,
        TestCase,
        TestSet,
    )
    from ragjudge.store import RunStore, open_store
    from ragjudge.testset import testset as testset


class _Entry:
    """A public function sharing its name with a subpackage (``ragjudge.sweep``): calling it
    calls ``function`` of ``module``; its attributes are those of ``package``."""

    def __init__(self, module: str, function: str, package: str) -> None:
        self._where = (module, function, package)

    def _function(self) -> Any:
        return getattr(importlib.import_module(self._where[0]), self._where[1])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._function()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module(self._where[2]), name)

    def __repr__(self) -> str:
        return f"<function ragjudge.{self._where[1]}>"


_ENTRIES = {
    "sweep": _Entry("ragjudge.api.sweep", "sweep", "ragjudge.sweep"),
    "testset": _Entry("ragjudge.testset", "testset", "ragjudge.testset"),
}


class _Package(types.ModuleType):
    """Keeps each ``_ENTRIES`` name bound to its entry when the import system binds the
    subpackage of the same name onto this package."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _ENTRIES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


if not TYPE_CHECKING:
    globals().update(_ENTRIES)
    sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragjudge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "Aggregate",
    "Answer",
    "CriteriaJudge",
    "Document",
    "EvaluationResult",
    "Evidence",
    "Generator",
    "Judge",
    "JudgeBase",
    "JudgeInput",
    "JudgeResult",
    "JudgeStatus",
    "Retriever",
    "RunStore",
    "SweepResult",
    "TestCase",
    "TestSet",
    "__version__",
    "agree",
    "compare",
    "evaluate",
    "judge",
    "open_store",
    "sweep",
    "testset",
]
