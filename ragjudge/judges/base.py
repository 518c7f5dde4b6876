"""What every judge shares, whatever its backend: one pre-check, one base class, and the
boundary that turns a user's object into a ``Judge`` (``ragjudge.protocols``).

Pre-check (``precheck``; ``ragjudge.judges.runner.judge_one`` runs it before every call, so the
offline, LLM, ragas and custom judges give the same status for the same bad input):

- ``requires_reference`` and no non-blank reference -> ``skipped_missing_reference``;
- ``needs_answer`` and a blank answer -> ``invalid_input`` ("empty answer");
- ``needs_contexts`` and no non-blank context -> ``invalid_input`` ("no contexts").

``conform(obj)`` is the one place that reads a judge's declarations: an object meeting the
``Judge`` Protocol is returned as is; an older judge that declares only ``name``, ``version``
and ``judge`` (and perhaps ``requires_reference``, ``at_k``) is wrapped, its missing
declarations taking ``JudgeBase``'s defaults (reads the answer and the contexts, no reference,
backend ``custom``). Anything else is a ``ConfigError`` naming what is missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, cast

from ragjudge.errors import ConfigError
from ragjudge.protocols import Judge, PrefixJudge
from ragjudge.schema import Evidence, JudgeInput, JudgeResult, JudgeStatus, TokenUsage

NEEDS = frozenset({"answer", "contexts", "reference"})
"""What a judge of one's own may declare it reads (``needs``)."""


def needs_of(needs: str | Iterable[str]) -> set[str]:
    """The set ``needs`` declares: one name given as a string is that name, not its letters."""
    return {needs} if isinstance(needs, str) else set(needs)


ResultBackend = Literal["offline", "llm", "ragas", "custom"]
RESULT_BACKENDS: tuple[ResultBackend, ...] = ("offline", "llm", "ragas", "custom")


def result_backend(judge: Judge) -> ResultBackend:
    """The ``backend`` written on a result: the judge's own, ``custom`` for a plugin's."""
    b = judge.backend
    return cast(ResultBackend, b) if b in RESULT_BACKENDS else "custom"


def make_result(
    judge: Judge,
    item: JudgeInput,
    status: JudgeStatus,
    *,
    score: float | None = None,
    evidence: Evidence | None = None,
    usage: TokenUsage | None = None,
    raw: str | None = None,
    error: str | None = None,
) -> JudgeResult:
    """A ``JudgeResult`` of ``judge`` on ``item`` (score clipped to [0, 1])."""
    if score is not None:
        score = min(1.0, max(0.0, float(score)))
    return JudgeResult(
        judge=judge.name,
        judge_version=str(judge.version),
        backend=result_backend(judge),
        item_id=item.id,
        score=score,
        status=status,
        evidence=evidence or Evidence(),
        usage=usage or TokenUsage(),
        raw=raw,
        error=error,
    )


def precheck(judge: Judge, item: JudgeInput) -> JudgeResult | None:
    """A typed result for an item ``judge`` cannot judge (module docstring), else None."""
    if judge.requires_reference and not (item.reference or "").strip():
        return make_result(
            judge,
            item,
            JudgeStatus.skipped_missing_reference,
            error=f"{judge.name} needs a reference answer",
        )
    if judge.needs_answer and not item.answer.strip():
        return make_result(judge, item, JudgeStatus.invalid_input, error="empty answer")
    if judge.needs_contexts and not any(c.strip() for c in item.contexts):
        return make_result(judge, item, JudgeStatus.invalid_input, error="no contexts")
    return None


class JudgeBase:
    """Base for a judge class: set ``name`` (and the declarations that differ from these
    defaults) and implement ``async _judge(item)``; ``judge`` runs the shared pre-check
    first. ``result(...)`` builds a typed result of this judge. A subclass that sets no
    ``version`` gets a digest of its source code, so an edited judge is a new version."""

    name: str = ""
    version: str = "v1"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "version" not in cls.__dict__:
            from ragjudge.adapters import source_version

            cls.version = source_version(cls)

    backend: str = "custom"
    requires_reference: bool = False
    needs_answer: bool = True
    needs_contexts: bool = True

    def result(
        self,
        item: JudgeInput,
        status: JudgeStatus,
        *,
        score: float | None = None,
        evidence: Evidence | None = None,
        usage: TokenUsage | None = None,
        raw: str | None = None,
        error: str | None = None,
    ) -> JudgeResult:
        return make_result(
            self,
            item,
            status,
            score=score,
            evidence=evidence,
            usage=usage,
            raw=raw,
            error=error,
        )

    async def judge(self, item: JudgeInput) -> JudgeResult:
        skip = precheck(self, item)
        if skip is not None:
            return skip
        return await self._judge(item)

    async def _judge(self, item: JudgeInput) -> JudgeResult:
        raise NotImplementedError


class _Declared(JudgeBase):
    """An older judge object with its missing declarations filled from ``JudgeBase``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = str(inner.name)
        self.version = str(inner.version)
        for attr in ("backend", "requires_reference", "needs_answer", "needs_contexts"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))

    async def judge(self, item: JudgeInput) -> JudgeResult:
        result: JudgeResult = await self.inner.judge(item)
        return result


class _DeclaredPrefix(_Declared):
    def at_k(self, result: JudgeResult, k: int) -> JudgeResult:
        derived: JudgeResult = self.inner.at_k(result, k)
        return derived


def conform(obj: Any) -> Judge:
    """``obj`` as a ``Judge`` (module docstring); a ``ConfigError`` when it is not one."""
    if isinstance(obj, Judge):
        return obj
    missing = [m for m in ("name", "version", "judge") if not hasattr(obj, m)]
    if missing:
        raise ConfigError(
            f"{obj!r} is not a judge: it has no {', '.join(missing)} "
            "(see ragjudge.protocols.Judge, or use @ragjudge.judge on a function)"
        )
    return _DeclaredPrefix(obj) if hasattr(obj, "at_k") else _Declared(obj)


def is_prefix(judge: Judge) -> bool:
    """The judge derives its result at a smaller k from the k_max one (``at_k``)."""
    return isinstance(judge, PrefixJudge)
