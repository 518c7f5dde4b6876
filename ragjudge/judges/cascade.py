"""The judge cascade (backend ``cascade``): the offline judge decides what it is sure of, the
LLM judge the rest.

Each item is judged by the ``first`` judge (offline). Its score ``s`` is read as a probability
and calibrated, ``p = sigmoid(a * logit(s) + b)`` (``CascadeBand.platt = (a, b)``; (1, 0), the
default, keeps the score: the offline judges decide at 0.5). The item **escalates** to the
``second`` judge (LLM) when ``low <= p <= high``, or when the first judge could not score it
(any status but ``ok``, except the shared pre-check's ``invalid_input`` and
``skipped_missing_reference``, which the second judge would give as well). Otherwise the first
judge's result stands.

Bookkeeping, on every result: ``backend`` is the judge that decided (``offline`` or ``llm``:
the store keeps it; a result of the shared pre-check, which no judge decided, is ``offline``,
as no call was made), ``judge_version`` is the cascade's own (both judges' versions and the
band), and ``evidence.features`` of every result the cascade judged holds
``cascade_escalated`` (1 or 0), ``cascade_p`` (the calibrated first-pass probability, absent
when the first judge did not score) and ``cascade_first_score`` (a pre-checked result has no
features). An escalated item carries the LLM call's usage; a kept one none.

Pre-flight (``Spending`` protocol): ``estimate_spend(items)`` runs the first pass over the
items (kept for the real pass) and says, before any call, how many items escalate and what
they cost: per escalated item one call of ``ceil(chars / 4)`` prompt tokens (the prompt
template plus the item's texts, ``ragjudge.llm.tokens.text_tokens``) and ``COMPLETION_TOKENS``
completion tokens, priced by the client's price table (an upper bound: a call the LLM cache
will answer is counted as paid). The sweep stops with a budget stop before spending when that
does not fit ``max_calls`` / ``max_cost_usd``; during the run, only items that escalate
(``spends``) are admitted against the budget, so a kept item never waits for it or is refused.

``fit_band(scores, verdicts, target)`` fits the calibration and the band from a sample judged
both ways (offline score, LLM verdict) or from labels (offline score, label): the Platt fit of
the verdict on the logit of the score (slope >= 0); a kept item keeps the first judge's own
verdict (``s >= 0.5``), right with probability ``q = p`` (or ``1 - p`` when it says no); the
items with ``q <= c`` escalate, ``c`` the smallest whose in-sample agreement with the verdicts
(escalated items agree by construction) reaches ``target``. Those items are the band
``[min(1 - c, m), max(c, m)]``, ``m = p(0.5)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, ValidationError, model_validator

from ragjudge.errors import ConfigError
from ragjudge.judges.registry import available, create_judge, register_judge, takes_client
from ragjudge.judges.runner import judge_one
from ragjudge.llm.tokens import text_tokens
from ragjudge.protocols import BatchedJudge, Judge, PrefixJudge
from ragjudge.schema import JudgeInput, JudgeResult, JudgeStatus, SpendEstimate

FIRST_BACKEND = "offline"
SECOND_BACKEND = "llm"
COMPLETION_TOKENS = 256
"""Completion tokens assumed per escalated call in the pre-flight estimate."""
PRECHECK_STATUSES = (JudgeStatus.invalid_input, JudgeStatus.skipped_missing_reference)
"""First-pass statuses the second judge would give as well: never escalated."""
_EPS = 1e-4


class CascadeBand(BaseModel):
    """Where the cascade escalates: calibrated first-pass probability in ``[low, high]``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    low: float = Field(default=0.3, ge=0.0, le=1.0)
    high: float = Field(default=0.7, ge=0.0, le=1.0)
    platt: tuple[FiniteFloat, FiniteFloat] = (1.0, 0.0)
    """(a, b) of ``p = sigmoid(a * logit(score) + b)``, ``a >= 0`` (a higher first-pass score
    never means less support); (1, 0) keeps the score."""

    @model_validator(mode="after")
    def _ordered(self) -> CascadeBand:
        if self.low > self.high:
            raise ValueError(f"low = {self.low} is above high = {self.high}")
        if self.platt[0] < 0:
            raise ValueError(f"platt slope a = {self.platt[0]} is negative")
        return self

    @property
    def tag(self) -> str:
        a, b = self.platt
        cal = "" if (a, b) == (1.0, 0.0) else f",platt={a:.4g}:{b:.4g}"
        return f"band={self.low:g}-{self.high:g}{cal}"

    def probability(self, score: float) -> float:
        """The calibrated probability of a first-pass score."""
        s = min(1.0 - _EPS, max(_EPS, score))
        a, b = self.platt
        z = a * math.log(s / (1.0 - s)) + b
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def escalates(self, result: JudgeResult) -> bool:
        """The second judge decides ``result``'s item (module docstring)."""
        if result.status in PRECHECK_STATUSES:
            return False
        if result.score is None:
            return True
        return self.low <= self.probability(result.score) <= self.high


def _key(item: JudgeInput) -> str:
    return item.model_dump_json()


class CascadeJudge:
    """``first`` (offline) on every item, ``second`` (LLM) on the uncertain ones."""

    backend = FIRST_BACKEND
    """What a result the shared pre-check decides records (no call was made); a judged
    result records the judge that decided it."""

    def __init__(
        self,
        first: Judge,
        second: Judge,
        band: CascadeBand | None = None,
        *,
        price: Callable[[int, int], float] | None = None,
        prompt_tokens: int = 0,
    ) -> None:
        if first.name != second.name:
            raise ConfigError(f"a cascade joins one judge: {first.name!r} != {second.name!r}")
        self.first, self.second = first, second
        self.client = getattr(second, "client", None)
        """The second judge's LLM client (None without one): what the pre-flight calls
        (``ragjudge.llm.preflight_judges``) and whose ledger ``judge --ledger`` writes."""
        self.band = band or CascadeBand()
        self.price = price
        self.prompt_tokens = prompt_tokens
        self.name = first.name
        self.version = f"cascade[{self.band.tag}]({first.version}|{second.version})"
        self.requires_reference = first.requires_reference or second.requires_reference
        self.needs_answer = first.needs_answer or second.needs_answer
        self.needs_contexts = first.needs_contexts or second.needs_contexts
        self._first: dict[str, JudgeResult] = {}

    def prepare(self, items: Sequence[JudgeInput]) -> None:
        """The first judge's batch preparation (``BatchedJudge``)."""
        if isinstance(self.first, BatchedJudge):
            self.first.prepare(items)

    async def first_pass(self, item: JudgeInput) -> JudgeResult:
        """The first judge's result on ``item`` (computed once, kept for the real pass)."""
        key = _key(item)
        got = self._first.get(key)
        if got is None:
            got = self._first[key] = await judge_one(self.first, item)
        return got

    async def estimate_spend(self, items: Sequence[JudgeInput]) -> SpendEstimate:
        """Items that escalate, and their calls, tokens and cost (module docstring)."""
        self.prepare(items)
        escalate = [i for i in items if self.band.escalates(await self.first_pass(i))]
        prompt = sum(self.prompt_tokens + _item_tokens(i) for i in escalate)
        completion = COMPLETION_TOKENS * len(escalate)
        return SpendEstimate(
            judge=self.name,
            items=len(items),
            escalated=len(escalate),
            calls=len(escalate),
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=self.price(prompt, completion) if self.price is not None else 0.0,
        )

    async def spends(self, item: JudgeInput) -> bool:
        """Whether ``item`` escalates to the LLM judge (``SpendingJudge``; from the kept first
        pass)."""
        return self.client is not None and self.band.escalates(await self.first_pass(item))

    async def judge(self, item: JudgeInput) -> JudgeResult:
        first = await self.first_pass(item)
        self._first.pop(_key(item), None)
        features: dict[str, float] = {"cascade_escalated": 0.0}
        if first.score is not None:
            features["cascade_first_score"] = first.score
            features["cascade_p"] = self.band.probability(first.score)
        decided = first
        if self.band.escalates(first):
            features["cascade_escalated"] = 1.0
            decided = await judge_one(self.second, item)
        return self._stamp(decided, features)

    def _stamp(self, result: JudgeResult, features: dict[str, float]) -> JudgeResult:
        evidence = result.evidence.model_copy(
            update={"features": {**result.evidence.features, **features}}
        )
        return result.model_copy(update={"judge_version": self.version, "evidence": evidence})

    def decider(self, result: JudgeResult) -> Judge:
        """The judge that decided ``result``."""
        escalated = result.evidence.features.get("cascade_escalated", 0.0) >= 0.5
        return self.second if escalated else self.first


class PrefixCascadeJudge(CascadeJudge):
    """A cascade of two judges that derive smaller k from k_max (``PrefixJudge``): the judge
    that decided at k_max derives every smaller k from its own evidence."""

    def at_k(self, result: JudgeResult, k: int) -> JudgeResult:
        judge = self.decider(result)
        assert isinstance(judge, PrefixJudge)
        return judge.at_k(result, k)


def _item_tokens(item: JudgeInput) -> int:
    texts = [item.question, item.answer, item.reference or "", *item.contexts]
    return sum(text_tokens(t) for t in texts)


def cascade(first: Judge, second: Judge, band: CascadeBand | None = None, **kw: Any) -> Judge:
    """A cascade of ``first`` and ``second`` (a ``PrefixJudge`` when both are)."""
    both = isinstance(first, PrefixJudge) and isinstance(second, PrefixJudge)
    cls = PrefixCascadeJudge if both else CascadeJudge
    return cls(first, second, band, **kw)


def _template_tokens(judge: Judge) -> int:
    """Prompt tokens of ``judge``'s template without the item (0 when it has none)."""
    prompt = getattr(judge, "prompt", None)
    path = getattr(prompt, "path", None)
    return text_tokens(path.read_text(encoding="utf-8")) if path is not None else 0


def _factory(name: str) -> Callable[..., Judge]:
    def build(client: Any = None, **options: Any) -> Judge:
        try:
            band = CascadeBand(**options)
        except ValidationError as exc:
            why = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'band'}: {e['msg']}" for e in exc.errors()
            )
            raise ConfigError(f"judges.options of the {name} cascade: {why}") from None
        first = create_judge(name, FIRST_BACKEND)
        wants = takes_client(name, SECOND_BACKEND)
        second = create_judge(name, SECOND_BACKEND, **({"client": client} if wants else {}))
        price = None
        ledger, model = getattr(client, "ledger", None), getattr(client, "model", None)
        if ledger is not None and model is not None:

            def price(prompt: int, completion: int) -> float:
                return float(ledger.prices.cost(model, prompt, completion))

        return cascade(first, second, band, price=price, prompt_tokens=_template_tokens(second))

    build.__name__ = f"cascade_{name}"
    build.options_model = CascadeBand  # type: ignore[attr-defined]  # registry.option_problem
    return build


def fit_band(
    scores: Sequence[float], verdicts: Sequence[float], target: float = 0.95
) -> CascadeBand:
    """Calibration and band from first-pass ``scores`` and the second judge's (or people's)
    ``verdicts`` on the same items (module docstring; a verdict >= 0.5 is a yes)."""
    from scipy.optimize import minimize

    raw, verdict = np.asarray(scores, dtype=float), np.asarray(verdicts, dtype=float)
    if len(raw) != len(verdict) or len(raw) < 2:
        raise ValueError("fit_band needs two or more (score, verdict) pairs of equal count")
    if not (np.isfinite(raw).all() and np.isfinite(verdict).all()):
        raise ValueError("fit_band: a score or verdict is not a finite number")
    if not 0.0 < target <= 1.0:
        raise ValueError(f"fit_band: target = {target} is not an agreement in (0, 1]")
    s = np.clip(raw, _EPS, 1.0 - _EPS)
    y = (verdict >= 0.5).astype(float)
    x = np.log(s / (1.0 - s))
    if 0 < y.sum() < len(y):

        def loss(w: np.ndarray) -> float:
            z = w[0] * x + w[1]
            return float(np.sum(np.logaddexp(0.0, z) - y * z) + 1e-3 * w[0] ** 2)

        fit = minimize(loss, np.array([1.0, 0.0]), bounds=[(0.0, None), (None, None)])
        a, b = (float(v) for v in fit.x)
    else:
        a, b = 1.0, 0.0
    band = CascadeBand(platt=(a, b), low=0.5, high=0.5)
    p = np.array([band.probability(float(v)) for v in s])
    m = band.probability(0.5)  # where the first judge's verdict flips, calibrated
    agree = np.where(s >= 0.5, p, 1.0 - p)  # P(the first judge's own verdict is right)
    kept_agree = (s >= 0.5) == (y >= 0.5)
    cuts = sorted({0.5, *agree.tolist(), 1.0})
    for c, above in zip(cuts, [*cuts[1:], 1.0], strict=True):
        if float(np.mean((agree <= c) | kept_agree)) >= target:
            mid = max(0.5, (c + above) / 2.0)  # halfway to the next item: none on the edge
            # {agree <= mid} is this band, as p rises with s: it spans m
            return CascadeBand(platt=(a, b), low=min(1.0 - mid, m), high=max(mid, m))
    return CascadeBand(platt=(a, b), low=0.0, high=1.0)


def _register() -> None:
    """A ``cascade`` backend for every judge that has both an offline and an LLM one."""
    for name, backends in available().items():
        if FIRST_BACKEND in backends and SECOND_BACKEND in backends:
            register_judge(name, "cascade")(_factory(name))


_register()

__all__ = ["CascadeBand", "CascadeJudge", "cascade", "fit_band"]
