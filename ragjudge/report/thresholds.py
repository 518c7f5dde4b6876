"""The thresholds file of a regression report (YAML, validated).

```yaml
primary:             # the metrics whose regression fails the job (Holm family-wise control)
  metrics: [faithfulness, completeness, objective]  # default: every judge and the objective
  ks: [5]            # default: the headline k (--headline-k, else 5 if the runs have it)
  pool_ks: false     # true: one test per primary metric over these ks (default: all ks)
fail_on: primary     # primary (default) or any: also fail on a secondary regression (BH)
defaults:            # apply to every metric unless overridden
  min_effect: 0.02   # smallest paired mean difference that matters (absolute, score units)
  alpha: 0.05        # level of each family (Holm for the primary, BH for the secondary)
  min_items: 10      # fewer paired scored items than this -> inconclusive
  coverage_drop: 0.05  # a coverage fall of at least this much is a finding (if significant)
metrics:
  faithfulness:
    min_effect: 0.03
    floors: {5: 0.85}  # absolute floor per k: faithfulness at k=5 never below 0.85
  ndcg:
    alpha: 0.01
```
Metric names are the judge names (``faithfulness``, ...), ``objective`` and retrieval metric
names (``ndcg``, ``recall``, ...) as they appear in the runs, without ``@k``. A name or a k the
runs do not have is refused before anything is compared, naming ``file:line`` and the key
(``check_against``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictInt, ValidationError

from ragjudge.errors import ConfigError

KeyPath = tuple[str | int, ...]


class MetricRule(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    min_effect: float | None = Field(default=None, ge=0)
    alpha: float | None = Field(default=None, gt=0, lt=1)
    min_items: int | None = Field(default=None, ge=1)
    coverage_drop: float | None = Field(default=None, ge=0, le=1)
    floors: dict[StrictInt, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)
    """The lowest mean allowed at each k (scores are in [0, 1])."""


class Defaults(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    min_effect: float = Field(default=0.02, ge=0)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    min_items: int = Field(default=10, ge=1)
    coverage_drop: float = Field(default=0.05, ge=0, le=1)


class PrimaryRule(BaseModel):
    """Which comparisons form the primary family."""

    model_config = ConfigDict(extra="forbid")

    metrics: list[str] | None = Field(default=None, min_length=1)
    """Default: every judge of the runs and ``objective``. An empty list is refused: the
    report could then never fail the job."""
    ks: list[StrictInt] | None = Field(default=None, min_length=1)
    """Default: the headline k; with ``pool_ks``, every k the runs share (not empty)."""
    pool_ks: bool = False
    """One test per primary metric on each query's mean over ``ks`` (paired by query)."""


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

    primary: PrimaryRule = Field(default_factory=PrimaryRule)
    fail_on: Literal["primary", "any"] = "primary"
    defaults: Defaults = Field(default_factory=Defaults)
    metrics: dict[str, MetricRule] = Field(default_factory=dict)

    _source: str = PrivateAttr(default="thresholds")
    _lines: dict[KeyPath, int] = PrivateAttr(default_factory=dict)

    def rule(self, metric: str, k: int | None) -> ResolvedRule:
        """``k=None`` (a test pooled over k) has no floor."""
        own = self.metrics.get(metric, MetricRule())
        d = self.defaults
        return ResolvedRule(
            min_effect=own.min_effect if own.min_effect is not None else d.min_effect,
            alpha=own.alpha if own.alpha is not None else d.alpha,
            min_items=own.min_items if own.min_items is not None else d.min_items,
            coverage_drop=own.coverage_drop if own.coverage_drop is not None else d.coverage_drop,
            floor=own.floors.get(k) if k is not None else None,
        )

    def _where(self, *path: str | int) -> str:
        line = self._lines.get(path)
        key = ".".join(str(p) for p in path)
        return f"{self._source}{f':{line}' if line else ''}: {key}"

    def check_against(
        self, known: Iterable[str], ks: Iterable[int], both: Iterable[str] | None = None
    ) -> None:
        """Refuse metric names and ks that the compared runs do not have, naming the key:
        ``known`` are the metrics of either run, ``both`` (default ``known``) those of both,
        which a primary metric must be (a primary metric one run lacks is never compared, and
        a report whose primary family is empty could never fail the job)."""
        known_set, k_set = set(known), set(ks)
        both_set = known_set if both is None else set(both)
        have = f"the runs have: {', '.join(sorted(known_set))}"
        have_k = f"the runs have k = {', '.join(map(str, sorted(k_set)))}"
        for name, rule in self.metrics.items():
            if name not in known_set:
                raise ConfigError(f"{self._where('metrics', name)}: unknown metric; {have}")
            for k in rule.floors:
                if k not in k_set:
                    where = self._where("metrics", name, "floors", str(k))
                    raise ConfigError(f"{where}: a floor at k={k}, which no run has; {have_k}")
        for i, name in enumerate(self.primary.metrics or []):
            if name not in known_set:
                raise ConfigError(
                    f"{self._where('primary', 'metrics', i)}: unknown metric {name!r}; {have}"
                )
            if name not in both_set:
                shared = ", ".join(sorted(both_set)) or "none"
                raise ConfigError(
                    f"{self._where('primary', 'metrics', i)}: {name!r} is in one run only, so "
                    f"it cannot be compared; both runs have: {shared}"
                )
        for i, k in enumerate(self.primary.ks or []):
            if k not in k_set:
                raise ConfigError(
                    f"{self._where('primary', 'ks', i)}: k={k}, which no run has; {have_k}"
                )


def _problems(exc: ValidationError, source: str, lines: Mapping[KeyPath, int]) -> str:
    out = []
    for e in exc.errors():
        path = tuple(str(x) for x in e["loc"])
        line = next((lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in lines), None)
        out.append(f"{source}{f':{line}' if line else ''}: {'.'.join(path)}: {e['msg']}")
    return "; ".join(out)


def parse_thresholds(
    raw: Any, *, source: str = "thresholds", lines: Mapping[KeyPath, int] | None = None
) -> Thresholds:
    """Validate a thresholds mapping; errors name ``source:line: key``."""
    lines = dict(lines or {})
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: expected a mapping with 'primary', 'defaults', 'metrics'")
    try:
        t = Thresholds.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_problems(exc, source, lines)) from None
    t._source, t._lines = source, lines
    return t


def load_thresholds(path: str | Path | None) -> Thresholds:
    """Read and validate a thresholds file (duplicate keys refused); ``None`` gives the
    defaults."""
    if path is None:
        return Thresholds()
    from ragjudge.io.yamlfile import load_yaml

    p = Path(path)
    if not p.is_file():
        what = "is a folder, not a file" if p.is_dir() else "does not exist"
        raise ConfigError(f"thresholds file {p} {what}")
    raw, lines = load_yaml(p)
    return parse_thresholds(raw, source=str(p), lines=lines)
