"""Paired comparison of two runs, metric by metric and k by k, with verdicts.

For each metric m and k present in both runs, over the queries both runs scored (differences
d_i = current_i - baseline_i, all metrics higher-is-better):

- effect = mean(d) with a paired percentile-bootstrap 95% interval;
- **identical** when every d_i is exactly 0: no test, and the comparison enters no family (a
  test that cannot reject must not dilute the others);
- otherwise p = two-sided sign-flip permutation p-value of mean(d) = 0, adjusted within its
  family: the **primary** family (the thresholds' ``primary`` metrics at its ks, default every
  judge and the objective at the headline k) by Holm's step-down (family-wise error rate), the
  **secondary** family (everything else) by Benjamini-Hochberg (false discovery rate);
- with ``primary.pool_ks`` each primary metric is tested once on the per-query mean over its ks,
  d_q = mean_k (current_qk - baseline_qk) over the queries scored at every one of those ks, and
  the per-k rows of primary metrics become secondary.

Verdicts, with e = min_effect and alpha of the metric's rule:

- ``regressed``: the current mean is below an absolute floor, or p_adj < alpha and d <= -e;
  ``improved``: p_adj < alpha and d >= e;
- ``unchanged``: equivalence shown by two one-sided tests at alpha, i.e. the (1 - 2 alpha)
  bootstrap interval of mean(d) lies inside (-e, e);
- ``inconclusive``: neither, with the minimum detectable effect (80% power, paired, level
  alpha / M for a family of M tests, from the observed SD of d) in the reason; or fewer than
  ``min_items`` queries scored by both runs;
- ``identical``: as above.

A regression fails the job (``gates``) when it is primary, comes from a floor, or the thresholds
say ``fail_on: any``. Coverage (scored / total) is compared too: with a = queries scored by the
baseline but not by the current run and b = the reverse, an exact one-sided McNemar test
(binomial, a of a + b at 1/2) flags a coverage drop of at least ``coverage_drop`` that is
significant at alpha; a coverage drop always fails the job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ragjudge.report.runscores import MetricSeries, RunScores
from ragjudge.report.thresholds import ResolvedRule, Thresholds
from ragjudge.stats import (
    EXACT_SIGN_FLIPS,
    benjamini_hochberg,
    bootstrap_means,
    holm,
    paired_mde,
    paired_permutation_p,
    percentile_interval,
)

VerdictName = Literal["regressed", "improved", "unchanged", "inconclusive", "identical"]
Role = Literal["primary", "secondary"]
VERDICTS: tuple[VerdictName, ...] = (
    "regressed",
    "improved",
    "unchanged",
    "inconclusive",
    "identical",
)


class MetricComparison(BaseModel):
    model_config = ConfigDict(frozen=True)

    metric: str
    k: int | None
    """The k compared; ``None`` for a test pooled over ``ks``."""
    ks: list[int]
    kind: str
    role: Role
    n_paired: int
    current_mean: float | None
    baseline_mean: float | None
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    eq_low: float | None
    """The (1 - 2 alpha) interval of the two one-sided tests of equivalence."""
    eq_high: float | None
    p_value: float | None
    p_adjusted: float | None
    correction: Literal["holm", "bh"] | None
    family_size: int | None
    mde: float | None
    """Minimum detectable effect at 80% power (tested rows)."""
    current_coverage: float
    baseline_coverage: float
    coverage_p: float | None
    coverage_dropped: bool
    verdict: VerdictName
    reason: str
    gates: bool
    """This row fails the job (a regression or coverage drop that counts for the exit code)."""
    rule: ResolvedRule

    @property
    def label(self) -> str:
        if self.k is None:
            return f"{self.metric} @ k={','.join(map(str, self.ks))} (pooled)"
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
        return any(m.gates for m in self.metrics)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = dict.fromkeys(VERDICTS, 0)
        for m in self.metrics:
            out[m.verdict] += 1
        out["coverage_dropped"] = sum(m.coverage_dropped for m in self.metrics)
        out["primary"] = sum(m.role == "primary" for m in self.metrics)
        out["gating"] = sum(m.gates for m in self.metrics)
        return out


@dataclass
class _Unit:
    """One comparison being computed."""

    metric: str
    k: int | None
    ks: list[int]
    kind: str
    role: Role
    rule: ResolvedRule
    a: np.ndarray
    b: np.ndarray
    cur_mean: float | None
    base_mean: float | None
    cov_cur: float
    cov_base: float
    cov_p: float | None = None
    lost: int = 0
    diff: float | None = None
    ci: tuple[float | None, float | None] = (None, None)
    eq: tuple[float | None, float | None] = (None, None)
    sd: float = 0.0
    p: float | None = None
    p_adj: float | None = None
    family: list[_Unit] = field(default_factory=list)
    mde: float | None = None

    @property
    def identical(self) -> bool:
        return self.a.size > 0 and bool(np.all(self.a == self.b))


def _mean(values: dict[str, float | None], among: set[str]) -> float | None:
    """The mean of the scored ``values`` of the queries in ``among`` (the queries both runs
    have: with ``--allow-partial`` the runs' query sets differ, and a mean or a floor over
    queries the other run lacks compared different questions)."""
    scored = [v for c, v in values.items() if v is not None and c in among]
    return float(np.mean(scored)) if scored else None


def _coverage_test(cur: MetricSeries, base: MetricSeries) -> tuple[float | None, int]:
    """McNemar's exact one-sided p-value for lost coverage, and the number of queries lost."""
    shared = set(cur.values) & set(base.values)
    lost = sum(1 for c in shared if base.values[c] is not None and cur.values[c] is None)
    gained = sum(1 for c in shared if base.values[c] is None and cur.values[c] is not None)
    if lost + gained == 0:
        return None, lost
    from scipy.stats import binomtest  # scipy.stats takes ~1 s to import: only when asked

    return float(binomtest(lost, lost + gained, 0.5, alternative="greater").pvalue), lost


def headline_k(
    run: RunScores, requested: int | None = None, baseline: RunScores | None = None
) -> int | None:
    """The headline k: ``requested``, else 5 if the run judged at k=5, else its largest k;
    with a ``baseline``, among the ks both runs have (a k only tonight's run has is never
    compared, and a headline there left the primary family empty)."""

    def ks_of(r: RunScores) -> set[int]:
        return {s.k for s in r.series if s.kind == "judge"} or {s.k for s in r.series}

    judge_ks = ks_of(run) & ks_of(baseline) if baseline is not None else ks_of(run)
    if requested is not None or not judge_ks:
        return requested
    return 5 if 5 in judge_ks else max(judge_ks)


def primary_keys(
    run: RunScores, thresholds: Thresholds, head_k: int | None
) -> tuple[list[str], list[int]]:
    """The primary metrics and ks (see ``PrimaryRule``)."""
    p = thresholds.primary
    names = p.metrics
    if names is None:
        names = sorted(
            {s.metric for s in run.series if s.kind in ("judge", "objective")},
            key=lambda m: RunScores.sort_key((m, 0)),
        )
    ks = p.ks
    if ks is None:
        ks = sorted({s.k for s in run.series}) if p.pool_ks else [k for k in [head_k] if k]
    return list(names), sorted(ks)


def _paired(cur: MetricSeries, base: MetricSeries) -> tuple[np.ndarray, np.ndarray]:
    ids = sorted(
        c
        for c in set(cur.values) & set(base.values)
        if cur.values[c] is not None and base.values[c] is not None
    )
    a = np.array([cur.values[c] for c in ids], dtype=float)
    b = np.array([base.values[c] for c in ids], dtype=float)
    return a, b


def _pooled(
    metric: str, ks: list[int], cur_by: dict, base_by: dict
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Per-query means over ``ks`` of the queries both runs scored at every k; coverages."""
    cur = [cur_by[(metric, k)].values for k in ks]
    base = [base_by[(metric, k)].values for k in ks]

    def full(series: list[dict]) -> set[str]:
        ids = set.intersection(*(set(v) for v in series))
        return {c for c in ids if all(v[c] is not None for v in series)}

    all_ids = set.intersection(*(set(v) for v in cur + base))
    both = sorted(full(cur) & full(base))
    a = np.array([np.mean([v[c] for v in cur]) for c in both], dtype=float)
    b = np.array([np.mean([v[c] for v in base]) for c in both], dtype=float)
    share = (lambda s: len(s & all_ids) / len(all_ids)) if all_ids else (lambda s: 0.0)
    return a, b, share(full(cur)), share(full(base))


def compare_runs(
    current: RunScores,
    baseline: RunScores,
    thresholds: Thresholds | None = None,
    *,
    head_k: int | None = None,
    n_resamples: int = 2000,
    n_permutations: int = 10_000,
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

    p_metrics, p_ks = primary_keys(current, thresholds, headline_k(current, head_k, baseline))
    pool = thresholds.primary.pool_ks
    units: list[_Unit] = []
    for key in keys:
        cur, base = cur_by[key], base_by[key]
        metric, k = key
        a, b = _paired(cur, base)
        cov_p, lost = _coverage_test(cur, base)
        primary = metric in p_metrics and k in p_ks and not pool
        units.append(
            _Unit(
                metric=metric,
                k=k,
                ks=[k],
                kind=cur.kind,
                role="primary" if primary else "secondary",
                rule=thresholds.rule(metric, k),
                a=a,
                b=b,
                cur_mean=_mean(cur.values, set(base.values)),
                base_mean=_mean(base.values, set(cur.values)),
                cov_cur=cur.coverage,
                cov_base=base.coverage,
                cov_p=cov_p,
                lost=lost,
            )
        )
    if pool:
        for metric in p_metrics:
            ks = [k for k in p_ks if (metric, k) in cur_by and (metric, k) in base_by]
            if not ks:
                continue
            a, b, cov_cur, cov_base = _pooled(metric, ks, cur_by, base_by)
            units.append(
                _Unit(
                    metric=metric,
                    k=None,
                    ks=ks,
                    kind=cur_by[(metric, ks[0])].kind,
                    role="primary",
                    rule=thresholds.rule(metric, None),
                    a=a,
                    b=b,
                    cur_mean=float(a.mean()) if a.size else None,
                    base_mean=float(b.mean()) if b.size else None,
                    cov_cur=cov_cur,
                    cov_base=cov_base,
                )
            )

    for u in units:
        if u.a.size:
            u.diff = float(np.mean(u.a - u.b))
        if u.a.size < u.rule.min_items or u.identical:
            continue
        d = u.a - u.b
        means = bootstrap_means(d, n_resamples=n_resamples, seed=seed)
        u.ci = percentile_interval(means, 0.95)
        u.eq = percentile_interval(means, 1 - 2 * u.rule.alpha)
        u.sd = float(np.std(d, ddof=1)) if d.size > 1 else 0.0
        u.p = paired_permutation_p(u.a, u.b, n_resamples=n_permutations, seed=seed)

    for role, adjust in (("primary", holm), ("secondary", benjamini_hochberg)):
        family = [u for u in units if u.role == role and u.p is not None]
        for u, adj in zip(family, adjust([float(u.p) for u in family]), strict=True):  # type: ignore[arg-type]
            u.p_adj, u.family = adj, family
            u.mde = paired_mde(u.sd, u.a.size, alpha=u.rule.alpha / len(family))

    out = [_finish(u, thresholds) for u in units]
    out.sort(key=lambda m: (m.role != "primary", RunScores.sort_key((m.metric, m.k or 0))))
    return Comparison(run_id=current.run_id, baseline_id=baseline.run_id, metrics=out, notes=notes)


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:+.3f}"


def _verdict(u: _Unit) -> tuple[VerdictName, str, bool]:
    """(verdict, reason, whether a regression came from a floor)."""
    rule = u.rule
    if rule.floor is not None and u.cur_mean is not None and u.cur_mean < rule.floor:
        return "regressed", f"mean {u.cur_mean:.3f} is below the floor {rule.floor:.3f}", True
    if u.a.size < rule.min_items and not (u.identical and u.a.size):
        return (
            "inconclusive",
            f"only {u.a.size} queries scored by both runs (at least {rule.min_items} needed)",
            False,
        )
    if u.identical:
        return "identical", f"all {u.a.size} paired values are identical: nothing to test", False
    assert u.p_adj is not None and u.diff is not None
    e, alpha, n, m = rule.min_effect, rule.alpha, u.a.size, len(u.family)
    name = "Holm" if u.role == "primary" else "BH"
    stats = (
        f"{_f(u.diff)} [{_f(u.ci[0])}, {_f(u.ci[1])}], p={u.p_adj:.3g} "
        f"({name} over the {m} tested {u.role}), n={n}"
    )
    lo, hi = u.eq
    equivalent = e > 0 and lo is not None and hi is not None and -e < lo and hi < e
    eq_text = f"{1 - 2 * alpha:.0%} interval [{_f(lo)}, {_f(hi)}]"
    if u.p_adj < alpha:
        if u.diff <= -e:
            return "regressed", stats, False
        if u.diff >= e:
            return "improved", stats, False
        if equivalent:
            return "unchanged", f"{stats}: significant but smaller than {e:g} ({eq_text})", False
        return (
            "inconclusive",
            f"{stats}: significant but smaller than {e:g}, and the {eq_text} reaches past ±{e:g}",
            False,
        )
    if equivalent:
        return (
            "unchanged",
            f"{stats}: equivalent within ±{e:g} (two one-sided tests, {eq_text})",
            False,
        )
    why = (
        f"{stats}: neither a significant change nor shown within ±{e:g} ({eq_text}); the "
        f"smallest change this n could detect (80% power) is ±{u.mde:.3f}"
    )
    changed = int(np.count_nonzero(u.a != u.b))
    if changed <= EXACT_SIGN_FLIPS:
        why += (
            f"; only {changed} of {n} paired values differ, so no sign-flip test can give "
            f"p below {2.0 ** (1 - changed):.3g} before adjustment"
        )
    return "inconclusive", why, False


def _finish(u: _Unit, thresholds: Thresholds) -> MetricComparison:
    verdict, reason, by_floor = _verdict(u)
    rule = u.rule
    cov_drop = (
        u.cov_p is not None
        and u.cov_base - u.cov_cur >= rule.coverage_drop
        and u.cov_p < rule.alpha
    )
    if cov_drop:
        reason += (
            f"; coverage fell from {u.cov_base:.0%} to {u.cov_cur:.0%} "
            f"({u.lost} queries no longer scored, McNemar p={u.cov_p:.3g})"
        )
    counts = verdict == "regressed" and (
        by_floor or u.role == "primary" or thresholds.fail_on == "any"
    )
    tested = u.p is not None
    return MetricComparison(
        metric=u.metric,
        k=u.k,
        ks=u.ks,
        kind=u.kind,
        role=u.role,
        n_paired=int(u.a.size),
        current_mean=u.cur_mean,
        baseline_mean=u.base_mean,
        diff=u.diff,
        ci_low=u.ci[0],
        ci_high=u.ci[1],
        eq_low=u.eq[0],
        eq_high=u.eq[1],
        p_value=u.p,
        p_adjusted=u.p_adj,
        correction=("holm" if u.role == "primary" else "bh") if tested else None,
        family_size=len(u.family) if tested else None,
        mde=u.mde,
        current_coverage=u.cov_cur,
        baseline_coverage=u.cov_base,
        coverage_p=u.cov_p,
        coverage_dropped=cov_drop,
        verdict=verdict,
        reason=reason,
        gates=counts or cov_drop,
        rule=rule,
    )
