"""Your own judge from a plain function: ``@ragjudge.judge(name=..., needs=(...))``.

The function's parameters are filled by name from the item: ``question``, ``answer``,
``contexts`` (ranked texts), ``reference``, ``context_ids``, ``id`` or ``item`` (the whole
``JudgeInput``). It may be sync or async and returns

- a number in [0, 1] (a bool counts as 1.0 / 0.0): the score, status ``ok``;
- a pair ``(score, explanation)``: the explanation is kept as evidence;
- a ``JudgeResult``: kept as is (name, version and backend set to this judge's).

``needs`` declares what the judge reads (``answer``, ``contexts``, ``reference``): the shared
pre-check (``ragjudge.judges.base.precheck``) then gives an item missing one of them a typed
status without calling the function, and a sweep judges identical inputs once. A score outside
[0, 1] is a ``parse_error`` result; an exception becomes a ``judge_error`` result in the
runner. The decorated object stays callable as the original function, is a ``Judge``, and is
registered under backend ``custom`` (so ``ragjudge judge --plugin MODULE --backend custom``
and a sweep config's import path ``module:name`` both find it).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from ragjudge.adapters import source_version
from ragjudge.errors import ConfigError
from ragjudge.judges.base import NEEDS, JudgeBase, needs_of
from ragjudge.judges.registry import register_judge
from ragjudge.schema import Evidence, JudgeInput, JudgeResult, JudgeStatus

_FIELDS = ("question", "answer", "contexts", "reference", "context_ids", "id", "item")


class FunctionJudge(JudgeBase):
    """A function as a ``Judge`` (module docstring)."""

    backend = "custom"

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        needs: Iterable[str] = ("answer", "contexts"),
        version: str | None = None,
    ) -> None:
        wanted = needs_of(needs)
        unknown = wanted - NEEDS
        if unknown:
            raise ConfigError(
                f"judge {name or fn.__name__!r}: unknown needs {sorted(unknown)}; "
                f"use {sorted(NEEDS)}"
            )
        params = list(inspect.signature(fn).parameters)
        bad = [p for p in params if p not in _FIELDS]
        if bad:
            raise ConfigError(
                f"judge {name or fn.__name__!r}: parameters {bad} are not item fields; "
                f"name them from {', '.join(_FIELDS)}"
            )
        self.fn = fn
        self.wrapped = fn
        self.params = params
        self.name = name or fn.__name__
        self.version = version or source_version(fn)
        self.needs_answer = "answer" in wanted
        self.needs_contexts = "contexts" in wanted
        self.requires_reference = "reference" in wanted
        self.__doc__ = fn.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<judge {self.name}@{self.version}>"

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        values = item.model_dump() | {"item": item}
        out = self.fn(**{p: values[p] for p in self.params})
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, JudgeResult):
            update = {"judge": self.name, "judge_version": self.version, "backend": "custom"}
            return out.model_copy(update=update)
        explanation = None
        if isinstance(out, tuple) and len(out) == 2:
            out, explanation = out
        if not isinstance(out, int | float):
            raise TypeError(f"judge {self.name} returned {type(out).__name__}, not a score")
        score = float(out)
        if not 0.0 <= score <= 1.0:
            return self.result(
                item, JudgeStatus.parse_error, error=f"score {score!r} is outside [0, 1]"
            )
        evidence = Evidence(explanation=str(explanation)) if explanation is not None else None
        return self.result(item, JudgeStatus.ok, score=score, evidence=evidence)


def judge(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    needs: Iterable[str] = ("answer", "contexts"),
    version: str | None = None,
) -> Any:
    """Decorator making a function a ``Judge`` (module docstring); ``@judge`` alone or
    ``@judge(name=..., needs=(...), version=...)``. ``version`` defaults to a digest of the
    function's source, so editing the function changes the judge's version."""

    def wrap(f: Callable[..., Any]) -> FunctionJudge:
        built = FunctionJudge(f, name=name, needs=needs, version=version)
        register_judge(built.name, "custom")(lambda: built)
        return built

    return wrap(fn) if fn is not None else wrap
