"""The budget of a run: stop before the LLM calls or their cost would exceed the limits.

Spent = the usage stored for the run (answers and judge results; a copied row carries zero
usage, so the stored usage sums to what was paid) plus what this process has spent since.
``TokenUsage.calls`` counts calls sent (a cache hit is in ``cached_calls`` and is free).

``admit()`` lets one more item start only if

    spent_calls + (in_flight + 1) * c_max <= max_calls   and
    spent_cost  + (in_flight + 1) * $_max <= max_cost_usd,

where ``c_max`` / ``$_max`` are the most calls / cost one item has taken so far (at least one
call). Until the first item's cost is known, items with a cost limit start one at a time. The
guarantee is exact while no item takes more calls or cost than the largest seen before it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ragjudge.schema import TokenUsage
from ragjudge.store.base import RunStore
from ragjudge.sweep.config import BudgetConfig


class BudgetExhausted(Exception):
    """Raised to stop starting new work; the run ends as ``stopped_budget``."""


class Budget:
    def __init__(self, config: BudgetConfig, store: RunStore, run_id: str) -> None:
        self.max_calls = config.max_calls
        self.max_cost = config.max_cost_usd
        usages = [a.usage for a in store.answers(run_id)]
        usages += [r.result.usage for r in store.judge_results(run_id)]
        self.prior_calls = sum(u.calls for u in usages)
        self.prior_cost = sum(u.cost_usd for u in usages)
        self.session_calls = 0
        self.session_cached = 0
        self.session_cost = 0.0
        self.in_flight = 0
        self.item_calls = 1
        self.item_cost: float | None = None

    @property
    def spent_calls(self) -> int:
        return self.prior_calls + self.session_calls

    @property
    def spent_cost(self) -> float:
        return self.prior_cost + self.session_cost

    def _fits(self, n: int) -> str | None:
        if self.max_calls is not None:
            need = self.spent_calls + n * self.item_calls
            if need > self.max_calls:
                return (
                    f"{self.spent_calls} of max_calls = {self.max_calls} spent; "
                    f"{n} more item(s) may take {n * self.item_calls}"
                )
        if self.max_cost is not None:
            need_cost = self.spent_cost + n * (self.item_cost or 0.0)
            if need_cost > self.max_cost:
                return f"${self.spent_cost:.4f} of max_cost_usd = ${self.max_cost:g} spent"
        return None

    async def admit(self) -> None:
        """Wait for a slot, or raise ``BudgetExhausted`` when one more item would not fit."""
        while self.max_cost is not None and self.item_cost is None and self.in_flight > 0:
            await asyncio.sleep(0.005)
        why = self._fits(self.in_flight + 1)
        if why is not None:
            raise BudgetExhausted(why)
        self.in_flight += 1

    def check_batch(self, n: int) -> None:
        """Raise ``BudgetExhausted`` unless ``n`` more items (started together) fit."""
        why = self._fits(n)
        if why is not None:
            raise BudgetExhausted(why)

    def check_estimate(self, calls: int, cost_usd: float) -> None:
        """Raise ``BudgetExhausted`` unless ``calls`` more calls costing ``cost_usd`` (a
        pre-flight estimate, ``protocols.SpendingJudge``) fit both limits."""
        if self.max_calls is not None and self.spent_calls + calls > self.max_calls:
            raise BudgetExhausted(
                f"pre-flight: {calls} LLM call(s) expected, {self.spent_calls} of "
                f"max_calls = {self.max_calls} already spent"
            )
        if self.max_cost is not None and self.spent_cost + cost_usd > self.max_cost:
            raise BudgetExhausted(
                f"pre-flight: ${cost_usd:.4f} of LLM calls expected, ${self.spent_cost:.4f} "
                f"of max_cost_usd = ${self.max_cost:g} already spent"
            )

    def done(self, usage: TokenUsage | None) -> None:
        """One admitted item finished (``usage`` None if it was cancelled)."""
        self.in_flight -= 1
        if usage is not None:
            self.spent_on([usage])

    def spent_on(self, usages: Iterable[TokenUsage]) -> None:
        for u in usages:
            paid = u.calls
            self.session_calls += paid
            self.session_cached += u.cached_calls
            self.session_cost += u.cost_usd
            self.item_calls = max(self.item_calls, paid)
            self.item_cost = max(self.item_cost or 0.0, u.cost_usd)
