"""The thresholds file of a regression report (YAML, validated).

```yaml
defaults:            # apply to every metric unless overridden
  min_effect: 0.02   # smallest paired mean difference that matters (absolute, score units)
  alpha: 0.05        # family-wise significance level (Holm-corrected across metrics)
  min_items: 10      # fewer paired scored items than this -> inconclusive
  coverage_drop: 0.05  # a coverage fall of at least this much is a finding (if significant)
metrics:
  faithfulness:
    min_effect: 0.03
    floors: {5: 0.85}  # absolute floor per k: faithfulness at k=5 never below 0.85
  ndcg@10:
    alpha: 0.01
```
Metric names are the judge names (``faithfulness``, ...) and retrieval metric names
(``ndcg@10``, ...) as they appear in the runs; an unknown name is an error that lists the known.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragjudge.errors import ConfigError


class MetricRule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_effect: float | None = Field(default=None, ge=0)
    alpha: float | None = Field(default=None, gt=0, lt=1)
    min_items: int | None = Field(default=None, ge=1)
    coverage_drop: float | None = Field(default=None, ge=0, le=1)
    floors: dict[int, float] = Field(default_factory=dict)


class Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid")

    min_effect: float = Field(default=0.02, ge=0)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    min_items: int = Field(default=10, ge=1)
    coverage_drop: float = Field(default=0.05, ge=0, le=1)


class ResolvedRule(BaseModel):
    """The rule in force for one metric: defaults overridden by the metric's own entry."""

    model_config = ConfigDict(frozen=True)

    min_effect: float
    alpha: float
    min_items: int
    coverage_drop: float
    floor: float | None


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid")

    defaults: Defaults = Field(default_factory=Defaults)
    metrics: dict[str, MetricRule] = Field(default_factory=dict)

    def rule(self, metric: str, k: int) -> ResolvedRule:
        own = self.metrics.get(metric, MetricRule())
        d = self.defaults
        return ResolvedRule(
            min_effect=own.min_effect if own.min_effect is not None else d.min_effect,
            alpha=own.alpha if own.alpha is not None else d.alpha,
            min_items=own.min_items if own.min_items is not None else d.min_items,
            coverage_drop=own.coverage_drop if own.coverage_drop is not None else d.coverage_drop,
            floor=own.floors.get(k),
        )

    def check_known(self, known: Iterable[str]) -> None:
        """Refuse metric names that no compared run has."""
        known_set = set(known)
        unknown = sorted(set(self.metrics) - known_set)
        if unknown:
            raise ConfigError(
                f"thresholds name unknown metrics: {', '.join(unknown)}; "
                f"the runs have: {', '.join(sorted(known_set))}"
            )


def load_thresholds(path: str | Path | None) -> Thresholds:
    """Read and validate a thresholds file; ``None`` gives the defaults."""
    if path is None:
        return Thresholds()
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"thresholds file {p} does not exist")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{p}: expected a mapping with 'defaults' and/or 'metrics'")
    try:
        return Thresholds.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"{p}: {problems}") from None
