"""Adaptive per-endpoint concurrency: additive increase, multiplicative decrease (AIMD).

The limit starts at the user cap. Each success adds ``1 / limit`` (about +1 per full window
of successes); an overload signal (429, 503, 529) multiplies it by ``DECREASE``, at most once
per window (a burst of 429s from one overload counts once); it stays in ``[1, cap]``.
Requests wait for a free slot; a slot is held only while an HTTP request is in flight, never
during a back-off sleep.
"""

from __future__ import annotations

import asyncio
import weakref

DECREASE = 0.7


class AdaptiveLimiter:
    """Concurrency limit for one endpoint on one event loop."""

    def __init__(self, cap: int, *, adaptive: bool = True) -> None:
        self.cap = cap
        self.adaptive = adaptive
        self.limit = float(cap)
        self.in_flight = 0
        self.peak = 0
        self.decreases = 0
        self._since_decrease = 0
        self._cond = asyncio.Condition()

    @property
    def current(self) -> int:
        return max(1, int(self.limit))

    async def acquire(self) -> None:
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_flight < self.current)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    async def release(self, *, overloaded: bool = False, ok: bool = True) -> None:
        async with self._cond:
            self.in_flight -= 1
            self._since_decrease += 1
            if self.adaptive:
                if overloaded:
                    if self._since_decrease >= self.current:
                        self.limit = max(1.0, self.limit * DECREASE)
                        self.decreases += 1
                        self._since_decrease = 0
                elif ok:
                    self.limit = min(float(self.cap), self.limit + 1.0 / self.limit)
            self._cond.notify_all()

    def set_cap(self, cap: int) -> None:
        self.cap = cap
        self.limit = min(self.limit, float(cap))


_LIMITERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, AdaptiveLimiter]] = (
    weakref.WeakKeyDictionary()
)


def limiter_for(endpoint: str, cap: int, *, adaptive: bool = True) -> AdaptiveLimiter:
    """The shared limiter of ``endpoint`` on the running loop (clients of one endpoint share
    it; the smallest cap wins)."""
    loop = asyncio.get_running_loop()
    per_loop = _LIMITERS.setdefault(loop, {})
    lim = per_loop.get(endpoint)
    if lim is None:
        lim = per_loop[endpoint] = AdaptiveLimiter(cap, adaptive=adaptive)
    elif cap < lim.cap:
        lim.set_cap(cap)
    return lim
