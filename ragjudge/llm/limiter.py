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

Rates: an endpoint's requests-per-minute and tokens-per-minute limits (``LLMSettings.rpm`` /
``tpm``) are kept by a ``RateGate`` that every request asks before it is sent. ``PacedGate``
spaces requests evenly (no burst): a request of ``t`` tokens may start once ``60 / rpm``
seconds passed since the previous start and ``t * 60 / tpm`` seconds of token budget are free,
so every window of any length holds at most its share of the limits (plus one request). A 429
(or ``Retry-After``) pauses the gate for everyone. One gate per endpoint per event loop here;
the Ray executor hands every worker one gate for the whole cluster
(``ragjudge.distributed.gate``), installed with ``use_gate``.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class RateGate(Protocol):
    """Keeps an endpoint's request and token rates; asked before every HTTP request."""

    async def wait(self, tokens: int) -> None:
        """Return when a request of about ``tokens`` tokens may be sent (it is then counted)."""
        ...

    async def pause(self, seconds: float) -> None:
        """Send nothing for ``seconds`` from now (the endpoint said 429 / Retry-After)."""
        ...


class PacedGate:
    """Even pacing at ``rpm`` requests and ``tpm`` tokens per minute (either may be None).

    A sender that wakes later than its slot by more than the slot's length or ``LATE`` (its
    event loop was busy) gives the slot up and asks again: late senders never go out in a
    burst larger than ``LATE`` seconds' worth."""

    def __init__(
        self, rpm: int | None, tpm: int | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rpm, self.tpm, self.clock = rpm, tpm, clock
        self.next_request = 0.0
        self.next_token = 0.0

    def length(self, tokens: int) -> float:
        """Seconds of the limits one request of ``tokens`` tokens takes up."""
        by_requests = 60.0 / self.rpm if self.rpm else 0.0
        return max(by_requests, max(tokens, 1) * 60.0 / self.tpm if self.tpm else 0.0)

    def reserve(self, tokens: int) -> float:
        """Count a request of ``tokens`` tokens; the time (on ``clock``) it may start."""
        start = max(self.clock(), self.next_request, self.next_token)
        if self.rpm:
            self.next_request = start + 60.0 / self.rpm
        if self.tpm:
            self.next_token = start + max(tokens, 1) * 60.0 / self.tpm
        return start

    def hold(self, seconds: float) -> None:
        """Grant nothing before ``seconds`` from now."""
        until = self.clock() + seconds
        self.next_request = max(self.next_request, until)
        self.next_token = max(self.next_token, until)

    async def wait(self, tokens: int) -> None:
        async def reserve() -> tuple[float, float]:
            return self.reserve(tokens), self.length(tokens)

        await wait_for_slot(reserve, self.clock)

    async def pause(self, seconds: float) -> None:
        self.hold(seconds)


LATE = 0.05
"""Seconds a sender may wake after its slot and still use it (at least the slot's length): a
busy event loop costs no slots, and at most ``LATE`` seconds' worth go out together."""


async def wait_for_slot(
    reserve: Callable[[], Awaitable[tuple[float, float]]], clock: Callable[[], float]
) -> None:
    """Sleep until the slot ``reserve()`` grants (its start on ``clock``, its length in
    seconds); ask again when woken later than ``max(length, LATE)`` after it."""
    while True:
        start, length = await reserve()
        delay = start - clock()
        if delay > 0:
            await asyncio.sleep(delay)
        if clock() - start <= max(length, LATE):
            return


_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, RateGate]] = (
    weakref.WeakKeyDictionary()
)
_PROCESS_GATE: list[RateGate] = []


def use_gate(gate: RateGate) -> None:
    """Make ``gate`` the gate of every client in this process, whatever its endpoint (a Ray
    worker installs the cluster's gate this way)."""
    _PROCESS_GATE[:] = [gate]


def gate_for(endpoint: str, rpm: int | None, tpm: int | None) -> RateGate | None:
    """The gate of ``endpoint`` on the running loop: the process's gate (``use_gate``) if one
    is installed, else a shared ``PacedGate`` when a limit is set, else None."""
    if _PROCESS_GATE:
        return _PROCESS_GATE[0]
    if rpm is None and tpm is None:
        return None
    per_loop = _GATES.setdefault(asyncio.get_running_loop(), {})
    gate = per_loop.get(endpoint)
    if gate is None:
        gate = per_loop[endpoint] = PacedGate(rpm, tpm)
    return gate
