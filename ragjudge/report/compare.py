"""Paired comparison of two runs, metric by metric and k by k, with verdicts.

For each metric m and k present in both runs, over the queries both runs scored:
- effect d = mean_i (current_i - baseline_i) with a paired percentile-bootstrap 95% interval;
- p = two-sided sign-flip permutation p-value of d = 0;
- Holm's step-down correction across all compared (m, k): with p-values sorted ascending
  p_(1) <= ... <= p_(M), p_adj_(j) = max_{i<=j} min(1, (M - i + 1) * p_(i)).

Verdict (all metrics are higher-is-better):
- ``regressed`` when the current mean is below an absolute floor, or p_adj < alpha and
  d <= -min_effect; ``improved`` when p_adj < alpha and d >= min_effect;
- ``inconclusive`` when fewer than ``min_items`` queries were scored by both runs;
- ``unchanged`` otherwise (not significant, or significant but smaller than min_effect).

Coverage (scored / total) is compared too: with a = queries scored by the baseline but not by the
current run and b = the reverse, an exact one-sided McNemar test (binomial, a of a + b at 1/2)
flags a coverage drop of at least ``coverage_drop`` that is significant at alpha.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.stats import binomtest

from ragjudge.report.runscores import MetricSeries, RunScores
from ragjudge.report.thresholds import ResolvedRule, Thresholds
from ragjudge.stats import paired_bootstrap, paired_permutation_p

VerdictName = Literal["regressed", "improved", "unchanged", "inconclusive"]


class MetricComparison(BaseModel):
    model_config = ConfigDict(frozen=True)

    metric: str
    k: int
    kind: str
    n_paired: int
    current_mean: float | None
    baseline_mean: float | None
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    p_adjusted: float | None
    current_coverage: float
    baseline_coverage: float
    coverage_p: float | None
    coverage_dropped: bool
    verdict: VerdictName
    reason: str
    rule: ResolvedRule

    @property
    def label(self) -> str:
        return f"{self.metric} @ k={self.k}"

    @property
    def flagged(self) -> bool:
        return self.verdict == "regressed" or self.coverage_dropped


class Comparison(BaseModel):
    """The full comparison of a run against its baseline."""

    run_id: str
    baseline_id: str
    metrics: list[MetricComparison]
    notes: list[str] = Field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return any(m.flagged for m in self.metrics)

    def counts(self) -> dict[str, int]:
        out = {"regressed": 0, "improved": 0, "unchanged": 0, "inconclusive": 0}
        for m in self.metrics:
            out[m.verdict] += 1
        out["coverage_dropped"] = sum(m.coverage_dropped for m in self.metrics)
        return out


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given."""
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[idx]))
        adjusted[idx] = running
    return [float(x) for x in adjusted]


def _mean(values: dict[str, float | None]) -> float | None:
    scored = [v for v in values.values() if v is not None]
    return float(np.mean(scored)) if scored else None


def _coverage_test(cur: MetricSeries, base: MetricSeries) -> tuple[float | None, int]:
    """McNemar's exact one-sided p-value for lost coverage, and the number of queries lost."""
    shared = set(cur.values) & set(base.values)
    lost = sum(1 for c in shared if base.values[c] is not None and cur.values[c] is None)
    gained = sum(1 for c in shared if base.values[c] is None and cur.values[c] is not None)
    if lost + gained == 0:
        return None, lost
    return float(binomtest(lost, lost + gained, 0.5, alternative="greater").pvalue), lost


def _fmt(x: float) -> str:
    return f"{x:+.3f}"


def compare_runs(
    current: RunScores,
    baseline: RunScores,
    thresholds: Thresholds | None = None,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare every (metric, k) the two runs share; see the module docstring."""
    thresholds = thresholds or Thresholds()
    cur_by, base_by = current.by_key(), baseline.by_key()
    keys = sorted(set(cur_by) & set(base_by), key=current.sort_key)
    notes: list[str] = []
    only_one = sorted((set(cur_by) ^ set(base_by)), key=current.sort_key)
    if only_one:
        names = ", ".join(f"{m}@k={k}" for m, k in only_one[:8])
        more = f" and {len(only_one) - 8} more" if len(only_one) > 8 else ""
        notes.append(f"not compared (present in one run only): {names}{more}")

    staged: list[dict] = []
    for key in keys:
        cur, base = cur_by[key], base_by[key]
        rule = thresholds.rule(*key)
        paired = sorted(
            c
            for c in set(cur.values) & set(base.values)
            if cur.values[c] is not None and base.values[c] is not None
        )
        a = [float(cur.values[c]) for c in paired]  # type: ignore[arg-type]
        b = [float(base.values[c]) for c in paired]  # type: ignore[arg-type]
        entry: dict = {
            "key": key,
            "kind": cur.kind,
            "rule": rule,
            "n": len(paired),
            "cur_mean": _mean(cur.values),
            "base_mean": _mean(base.values),
            "diff": None,
            "lo": None,
            "hi": None,
            "p": None,
        }
        if len(paired) >= rule.min_items:
            diff, lo, hi = paired_bootstrap(a, b, n_resamples=n_resamples, seed=seed)
            entry.update(diff=diff, lo=lo, hi=hi, p=paired_permutation_p(a, b, seed=seed))
        elif paired:
            entry["diff"] = float(np.mean(np.subtract(a, b)))
        cov_p, lost = _coverage_test(cur, base)
        entry.update(cov_cur=cur.coverage, cov_base=base.coverage, cov_p=cov_p, lost=lost)
        staged.append(entry)

    tested = [e for e in staged if e["p"] is not None]
    for e, adj in zip(tested, holm([e["p"] for e in tested]), strict=True):
        e["p_adj"] = adj

    out = []
    for e in staged:
        verdict, reason = _verdict(e, e["rule"])
        cov_drop = (
            e["cov_p"] is not None
            and e["cov_base"] - e["cov_cur"] >= e["rule"].coverage_drop
            and e["cov_p"] < e["rule"].alpha
        )
        if cov_drop:
            reason += (
                f"; coverage fell from {e['cov_base']:.0%} to {e['cov_cur']:.0%} "
                f"({e['lost']} queries no longer scored, McNemar p={e['cov_p']:.3g})"
            )
        metric, k = e["key"]
        out.append(
            MetricComparison(
                metric=metric,
                k=k,
                kind=e["kind"],
                n_paired=e["n"],
                current_mean=e["cur_mean"],
                baseline_mean=e["base_mean"],
                diff=e["diff"],
                ci_low=e["lo"],
                ci_high=e["hi"],
                p_value=e["p"],
                p_adjusted=e.get("p_adj"),
                current_coverage=e["cov_cur"],
                baseline_coverage=e["cov_base"],
                coverage_p=e["cov_p"],
                coverage_dropped=cov_drop,
                verdict=verdict,
                reason=reason,
                rule=e["rule"],
            )
        )
    return Comparison(run_id=current.run_id, baseline_id=baseline.run_id, metrics=out, notes=notes)


def _verdict(e: dict, rule: ResolvedRule) -> tuple[VerdictName, str]:
    cur_mean = e["cur_mean"]
    if rule.floor is not None and cur_mean is not None and cur_mean < rule.floor:
        return "regressed", f"mean {cur_mean:.3f} is below the floor {rule.floor:.3f}"
    if e["p"] is None:
        return "inconclusive", (
            f"only {e['n']} queries scored by both runs (at least {rule.min_items} needed)"
        )
    d, p_adj = e["diff"], e["p_adj"]
    stats = f"{_fmt(d)} [{_fmt(e['lo'])}, {_fmt(e['hi'])}], p={p_adj:.3g} (Holm), n={e['n']}"
    if p_adj < rule.alpha:
        if d <= -rule.min_effect:
            return "regressed", stats
        if d >= rule.min_effect:
            return "improved", stats
        return "unchanged", f"{stats}: significant but smaller than {rule.min_effect:g}"
    return "unchanged", f"{stats}: not significant at {rule.alpha:g}"
