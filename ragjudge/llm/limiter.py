"""Adaptive per-endpoint concurrency: additive increase, multiplicative decrease (AIMD).

The limit starts at the user cap. Each success adds ``1 / limit`` (about +1 per full window
of successes). The share of overload signals (429, 502-504, 529) among recent responses is
tracked as an exponential moving average (weight ``ALPHA``); while it exceeds ``TOLERANCE``
an overload signal multiplies the limit by ``DECREASE``, at most once per window (a burst of
429s from one overload counts once). The limit stays in ``[1, cap]``. The tolerance keeps a
trickle of 429s (which ``Retry-After`` handles) from collapsing throughput; sustained
overload shrinks the limit within a few windows.
Requests wait in FIFO order for a free slot (a release wakes only as many waiters as there
are free slots); a slot is held only while an HTTP request is in flight, never during a
back-off sleep.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque

DECREASE = 0.7
ALPHA = 0.02
TOLERANCE = 0.35


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
        self.overload_share = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def current(self) -> int:
        return max(1, int(self.limit))

    async def acquire(self) -> None:
        if self.in_flight < self.current and not self._waiters:
            self._take()
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut  # the slot was taken for us by _wake
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self._give_back()
            else:
                self._waiters.remove(fut)
            raise

    def _take(self) -> None:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)

    def _give_back(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.current:
            fut = self._waiters.popleft()
            if not fut.done():
                self._take()
                fut.set_result(None)

    async def release(self, *, overloaded: bool = False, ok: bool = True) -> None:
        self._since_decrease += 1
        self.overload_share += ALPHA * (float(overloaded) - self.overload_share)
        if self.adaptive:
            if overloaded:
                if self.overload_share > TOLERANCE and self._since_decrease >= self.current:
                    self.limit = max(1.0, self.limit * DECREASE)
                    self.decreases += 1
                    self._since_decrease = 0
            elif ok:
                self.limit = min(float(self.cap), self.limit + 1.0 / self.limit)
        self._give_back()

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
