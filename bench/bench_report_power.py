"""False alarms and power of the regression report, before and after the statistics redesign.

A realistic family: 5 judges and the objective (their mean) at k = 1, 3, 5, all primary (18
comparisons), plus 5 retrieval metrics at the same ks that did not move (15 comparisons whose
paired differences are all exactly 0). Scores of question q, metric m, k in run r:

    s = clip(quality_q + offset_{q,m} + noise_{q,m,k,r}, 0, 1)

with quality ~ Beta(4, 3), offset ~ N(0, 0.1), noise ~ N(0, --noise) independent per run (a noisy
judge or pipeline; the SD of the paired differences is about 0.2 at the default, as observed
on the demo set). A planted drop subtracts delta from completeness at the headline k = 5 in the
current run before clipping (``--where every-k``: at every k).

- **before**: the old procedure, kept here only: Holm over every judge and retrieval comparison
  (30, identical ones included with p = 1), regressed when p_adj < alpha and d <= -min_effect.
- **after** (``ragjudge.report.compare.compare_runs``): Holm over the primary family only
  (identical comparisons leave it), exit 1 on a primary regression; three thresholds files:
  the default (primary = the judges and the objective at the headline k), ``primary: {ks: [1,
  3, 5]}`` (18 primary comparisons), and ``primary: {pool_ks: true}`` (one test per metric on
  each question's mean over k).

A false alarm is a report that would exit 1 on a null pair; power is the share of replicates in
which the report exits 1 and calls a comparison of the planted metric (one with a planted drop,
or its pooled row) regressed. All procedures see the same p-values (sign-flip permutation,
--permutations per test; the report itself uses 10,000).

Usage: .venv/bin/python bench/bench_report_power.py [--reps 200] [--ns 60,200,1000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ragjudge.report.compare import Comparison, MetricComparison, compare_runs
from ragjudge.report.runscores import MetricSeries, RunScores, add_objective
from ragjudge.report.thresholds import Thresholds
from ragjudge.stats import holm

JUDGES = ("faithfulness", "answer_relevancy", "completeness", "context_recall", "context_precision")
RETRIEVAL = ("ndcg", "recall", "precision", "mrr", "hit_rate")
KS = (1, 3, 5)
ALPHA, MIN_EFFECT = 0.05, 0.02
PLANTED, HEADLINE_K = "completeness", 5


def _run(run_id: str, scores: dict[tuple[str, int], np.ndarray]) -> RunScores:
    ids = [f"q{i:04d}" for i in range(len(next(iter(scores.values()))))]
    series = [
        MetricSeries(
            metric=m,
            k=k,
            kind="judge" if m in JUDGES else "retrieval",
            values=dict(zip(ids, vals.tolist(), strict=True)),
        )
        for (m, k), vals in scores.items()
    ]
    run = RunScores(run_id=run_id, series=series)
    add_objective(run, dict.fromkeys(JUDGES, 1.0))
    return run


def pair(
    rng: np.random.Generator, n: int, delta: float, where: str, noise: float
) -> tuple[RunScores, RunScores]:
    quality = rng.beta(4, 3, n)
    base, cur = {}, {}
    for m in JUDGES:
        offset = rng.normal(0, 0.1, n)
        for k in KS:
            mean = quality + offset
            base[(m, k)] = np.clip(mean + rng.normal(0, noise, n), 0, 1)
            hit = m == PLANTED and (k == HEADLINE_K or where == "every-k")
            cur[(m, k)] = np.clip(mean + rng.normal(0, noise, n) - (delta if hit else 0.0), 0, 1)
    for m in RETRIEVAL:
        for k in KS:
            base[(m, k)] = cur[(m, k)] = rng.uniform(0, 1, n).round(3)
    return _run("cur", cur), _run("base", base)


def _planted(m: MetricComparison, where: str) -> bool:
    return m.metric == PLANTED and (m.k is None or m.k == HEADLINE_K or where == "every-k")


def old_procedure(cmp: Comparison, where: str) -> tuple[bool, bool]:
    """(exit 1, exit 1 with a planted row regressed) under Holm over every judge and retrieval
    comparison, identical ones included."""
    rows = [m for m in cmp.metrics if m.kind != "objective" and m.k is not None]
    adjusted = holm([m.p_value if m.p_value is not None else 1.0 for m in rows])
    regressed = [
        adj < ALPHA and m.diff is not None and m.diff <= -MIN_EFFECT
        for m, adj in zip(rows, adjusted, strict=True)
    ]
    caught = any(r and _planted(m, where) for m, r in zip(rows, regressed, strict=True))
    return any(regressed), any(regressed) and caught


def new_procedure(cmp: Comparison, where: str) -> tuple[bool, bool]:
    """(exit 1, exit 1 with a planted row regressed)."""
    caught = any(m.verdict == "regressed" and m.gates and _planted(m, where) for m in cmp.metrics)
    return cmp.regressed, cmp.regressed and caught


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--ns", default="60,200,1000")
    ap.add_argument("--deltas", default="0.05,0.10")
    ap.add_argument("--where", choices=["k1", "every-k"], default="k1")
    ap.add_argument("--noise", type=float, default=0.15)
    ap.add_argument("--permutations", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rules = [
        Thresholds(),
        Thresholds.model_validate({"primary": {"ks": list(KS)}}),
        Thresholds.model_validate({"primary": {"pool_ks": True}}),
    ]
    deltas = [0.0] + [float(x) for x in args.deltas.split(",")]
    rng = np.random.default_rng(args.seed)
    se = np.sqrt(ALPHA * (1 - ALPHA) / args.reps)
    print(
        f"{args.reps} replicates per cell, noise SD {args.noise}, drop at "
        f"{'completeness, every k' if args.where == 'every-k' else 'completeness @ k=5'}, "
        f"alpha {ALPHA}, min_effect {MIN_EFFECT}; Monte-Carlo SE at 0.05: {se:.3f}\n"
    )
    print(
        "| n | planted drop | before: Holm over all 30 | after: default primary (k=5) "
        "| after: primary at k=1,3,5 | after: pooled over k |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    seconds: dict[int, float] = {}
    for n in [int(x) for x in args.ns.split(",")]:
        for delta in deltas:
            start = time.perf_counter()
            hits = np.zeros(4)
            for _ in range(args.reps):
                cur, base = pair(rng, n, delta, args.where, args.noise)
                seed = int(rng.integers(1 << 30))
                kw = {"seed": seed, "n_resamples": 200, "n_permutations": args.permutations}
                cmps = [compare_runs(cur, base, r, **kw) for r in rules]  # type: ignore[arg-type]
                outcomes = [old_procedure(cmps[0], args.where)]
                outcomes += [new_procedure(c, args.where) for c in cmps]
                # null: any exit 1 is a false alarm; planted: the planted row must be caught
                hits += [o[0] if delta == 0 else o[1] for o in outcomes]
            rates = hits / args.reps
            label = "none (false alarms)" if delta == 0 else f"{delta:.2f}"
            cells = " | ".join(f"{r:.3f}" for r in rates)
            print(f"| {n} | {label} | {cells} |", flush=True)
            seconds[n] = seconds.get(n, 0.0) + time.perf_counter() - start
    print("\nseconds per n: " + ", ".join(f"{n}: {s:.0f}" for n, s in seconds.items()))


if __name__ == "__main__":
    main()
