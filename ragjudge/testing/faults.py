"""Fault injection for the local test server.

A ``FaultPlan`` decides, per chat request (numbered 0, 1, ... in arrival order), whether and
how to fail it: ``script`` (request index -> fault) first, else ``rates`` drawn from a random
generator seeded by ``(seed, index)``, so a plan gives the same faults for the same request
numbers in every run.

Faults:

- ``429``: rate limited, with ``Retry-After`` (seconds, may be fractional) and ``retry-after-ms``
- ``500`` / ``503``: server error / overloaded
- ``hang``: no answer for ``hang_seconds`` (past the client timeout)
- ``malformed``: the message content is not valid JSON (prose prefix, single quotes)
- ``truncated``: the content cut in half, ``finish_reason="length"``
- ``drop``: the connection is closed without a response
- ``bad_body``: HTTP 200 whose body is not valid JSON
- ``refuse``: the message carries a ``refusal`` and no content
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ragjudge.errors import ConfigError

FAULTS = ("429", "500", "503", "hang", "malformed", "truncated", "drop", "bad_body", "refuse")


@dataclass
class FaultPlan:
    rates: dict[str, float] = field(default_factory=dict)
    """fault -> probability per request (their sum at most 1)."""
    script: dict[int, str] = field(default_factory=dict)
    """request index -> fault, applied before ``rates``."""
    seed: int = 0
    retry_after: float = 0.05
    """Seconds sent in ``Retry-After`` with a 429."""
    hang_seconds: float = 30.0

    def __post_init__(self) -> None:
        bad = [f for f in [*self.rates, *self.script.values()] if f not in FAULTS]
        if bad:
            raise ConfigError(f"unknown fault(s) {bad}; use {', '.join(FAULTS)}")
        if any(r < 0 for r in self.rates.values()) or sum(self.rates.values()) > 1 + 1e-9:
            raise ConfigError(f"fault rates must be >= 0 and sum to at most 1: {self.rates}")

    @classmethod
    def sequence(cls, faults: Sequence[str | None], **kwargs: float) -> FaultPlan:
        """Scripted faults for requests 0, 1, ... (None = answer normally)."""
        script = {i: f for i, f in enumerate(faults) if f is not None}
        return cls(script=script, **kwargs)  # type: ignore[arg-type]

    @classmethod
    def parse(cls, spec: str, *, seed: int = 0, retry_after: float = 0.05) -> FaultPlan:
        """``"429=0.2,malformed=0.05"`` -> rates."""
        rates: dict[str, float] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            name, sep, value = part.partition("=")
            try:
                rates[name.strip()] = float(value)
            except ValueError:
                raise ConfigError(
                    f"bad fault rate {part!r}: write fault=probability, e.g. 429=0.2"
                ) from None
            if not sep:
                raise ConfigError(f"bad fault rate {part!r}: write fault=probability")
        return cls(rates=rates, seed=seed, retry_after=retry_after)

    def decide(self, index: int) -> str | None:
        """The fault for request ``index``, or None."""
        if index in self.script:
            return self.script[index]
        if not self.rates:
            return None
        u = random.Random(f"{self.seed}:{index}").random()
        acc = 0.0
        for name in sorted(self.rates):
            acc += self.rates[name]
            if u < acc:
                return name
        return None


def describe(plan: FaultPlan | None) -> Mapping[str, object]:
    if plan is None:
        return {}
    return {"rates": dict(plan.rates), "scripted": len(plan.script), "seed": plan.seed}
