"""Reading a sweep: per-k aggregates with intervals, the objective, and the choice of k.

For every metric m (each judge, each retrieval metric) and every k: ``mean ± 95% bootstrap CI
(n scored / n total)`` over the test cases (``ragjudge.stats``).

The objective of case q at k is the weighted mean of the metrics scored for q at k,

    O(q, k) = sum_m w_m * s_m(q, k) / sum_{m scored} w_m  -  lambda * c(q, k) / scale,

with default weights equal over the sweep's judges, and the optional penalty c (context tokens,
generation tokens or generation cost at k). O(q, k) is undefined while a weighted judge has not
judged q at k (a partial run): a missing judgement never shrinks the average to fewer metrics.
A case is kept for the choice of k only if O(q, k) is defined at every k, so that all k are
compared on the same cases. A run that is not ``finished`` (budget stop, interrupted, failed)
gets no best k, only its tables, and the reason. A k above the most documents the retriever
returned (``retrieved_max``) is *not retrieved*: it repeats a smaller k, takes no part in the
choice and is never reported within noise.

best k = argmax_k mean_q O(q, k) (ties go to the smaller k). k is *within noise* of the best
when the 95% paired-bootstrap interval of mean_q (O(q, k) - O(q, best)) contains 0, or, with a
practical-equivalence margin ``objective.margin`` > 0, reaches [-margin, margin].
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from ragjudge.schema import Aggregate, Answer, JudgeStatus, RunManifest, TokenUsage
from ragjudge.stats import aggregate_scores, paired_bootstrap
from ragjudge.store.view import RunView
from ragjudge.sweep.config import ObjectiveConfig
from ragjudge.text import tokens

MetricKind = Literal["judge", "retrieval", "objective"]


class MetricAtK(BaseModel):
    metric: str
    kind: MetricKind
    k: int
    aggregate: Aggregate


class NoiseTest(BaseModel):
    """mean_q (O(q, k) - O(q, best)) with its paired-bootstrap interval."""

    k: int
    diff: float
    ci_low: float
    ci_high: float
    margin: float = 0.0
    """Practical-equivalence margin (``objective.margin``); 0 = pure noise test."""

    @property
    def within_noise(self) -> bool:
        """The interval reaches [-margin, margin]: ci_low <= margin and ci_high >= -margin."""
        return self.ci_low <= self.margin and self.ci_high >= -self.margin


class KChoice(BaseModel):
    best_k: int | None
    within_noise: list[int] = Field(default_factory=list)
    """Every k whose difference from the best is within noise (the best included)."""
    tests: list[NoiseTest] = Field(default_factory=list)
    n_cases: int = 0
    """Cases with the objective defined at every k (the paired sample)."""
    weights: dict[str, float] = Field(default_factory=dict)
    penalty: str | None = None
    reason: str | None = None
    """Why no k could be chosen, when ``best_k`` is None."""
    not_retrieved: list[int] = Field(default_factory=list)
    """k above the most documents the retriever returned for any query (e.g. a LangChain
    retriever with its own ``k=4``): their answers repeat the largest retrieved k, so they are
    neither chosen nor called within noise."""

    @property
    def smallest_within_noise(self) -> int | None:
        return min(self.within_noise) if self.within_noise else None


class CostAtK(BaseModel):
    """What the sweep spent at one k (sums over cases) and what the pipeline costs per case."""

    k: int
    context_tokens_mean: float
    generation_tokens: int = 0
    judge_tokens: int = 0
    calls: int = 0
    cached_calls: int = 0
    cost_usd: float = 0.0


class SweepSummary(BaseModel):
    run_id: str
    manifest: RunManifest | None = None
    ks: list[int]
    judges: list[str]
    retrieval_metrics: list[str]
    metrics: list[MetricAtK]
    choice: KChoice
    costs: list[CostAtK]
    n_cases: int

    def table(self, kind: MetricKind | None = None) -> dict[str, dict[int, Aggregate]]:
        """metric -> k -> aggregate."""
        out: dict[str, dict[int, Aggregate]] = {}
        for m in self.metrics:
            if kind is None or m.kind == kind:
                out.setdefault(m.metric, {})[m.k] = m.aggregate
        return out


def _penalty_amount(answer: Answer, per: str) -> float:
    if per == "context_tokens":
        return float(sum(len(tokens(c)) for c in answer.contexts))
    if per == "generation_tokens":
        return float(answer.usage.prompt_tokens + answer.usage.completion_tokens)
    return float(answer.usage.cost_usd)


def analyse(
    data: RunView,
    *,
    ks: Sequence[int],
    judges: Sequence[str],
    objective: ObjectiveConfig | None = None,
    seed: int = 0,
) -> SweepSummary:
    """Aggregates per (metric, k), costs per k and the choice of k (module docstring)."""
    objective = objective or ObjectiveConfig()
    ks = sorted(ks)
    cases = data.cases

    scores: dict[tuple[str, int], dict[str, float | None]] = defaultdict(dict)
    statuses: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
    results = data.results
    for (judge, k, case), score in results.scores.items():
        scores[(judge, k)][case] = score
    for (judge, k, case), judged in results.statuses.items():
        statuses[(judge, k)][case] = judged.value
    for (metric, k, case), value in data.retrieval.items():
        scores[(metric, k)][case] = value
    retrieval_names = data.retrieval_metrics

    metrics: list[MetricAtK] = []
    for name, kind in [(j, "judge") for j in judges] + [(m, "retrieval") for m in retrieval_names]:
        for k in ks:
            per_case = scores.get((name, k), {})
            if kind == "judge":
                # A case the run has not judged yet (budget stop) counts as not scored.
                vals = [per_case.get(c) for c in cases]
                sts = [statuses[(name, k)].get(c, JudgeStatus.skipped_budget.value) for c in cases]
                agg = aggregate_scores(vals, sts, seed=seed)
            else:
                agg = aggregate_scores(list(per_case.values()), seed=seed)
            metrics.append(MetricAtK(metric=name, kind=kind, k=k, aggregate=agg))

    answers = data.answers
    top = data.retrieved_max
    not_retrieved = [k for k in ks if top is not None and k > top]
    choice, per_k_objective = _choose_k(
        scores, answers, cases, [k for k in ks if k not in not_retrieved], judges, objective, seed
    )
    if not_retrieved:
        choice = choice.model_copy(update={"not_retrieved": not_retrieved})
    status = data.manifest.status if data.manifest is not None else "finished"
    if status != "finished":
        choice = KChoice(
            best_k=None,
            n_cases=choice.n_cases,
            weights=choice.weights,
            penalty=choice.penalty,
            reason=f"the run is {status}, so some k may lack judgements: a k is chosen from "
            "a finished run only (resume it to finish); the tables show what it has",
            not_retrieved=not_retrieved,
        )
    for k in ks:  # a not-retrieved k has no objective: it takes no part in the choice
        obj_vals = per_k_objective.get(k, [])
        metrics.append(
            MetricAtK(
                metric="objective",
                kind="objective",
                k=k,
                aggregate=aggregate_scores(obj_vals, seed=seed),
            )
        )
    return SweepSummary(
        run_id=data.run_id,
        manifest=data.manifest,
        ks=list(ks),
        judges=list(judges),
        retrieval_metrics=retrieval_names,
        metrics=metrics,
        choice=choice,
        costs=_costs(data, ks),
        n_cases=len(cases),
    )


def _choose_k(
    scores: dict[tuple[str, int], dict[str, float | None]],
    answers: dict[tuple[str, int], Answer],
    cases: Sequence[str],
    ks: Sequence[int],
    judges: Sequence[str],
    objective: ObjectiveConfig,
    seed: int,
) -> tuple[KChoice, dict[int, list[float | None]]]:
    weights = dict(objective.weights) if objective.weights else {j: 1.0 for j in judges}
    weights = {m: w for m, w in weights.items() if w > 0}
    penalty = objective.penalty
    label = f"{penalty.weight:g} per {penalty.scale:g} {penalty.per}" if penalty else None

    obj: dict[int, dict[str, float]] = {k: {} for k in ks}
    for k in ks:
        for c in cases:
            num = den = 0.0
            for m, w in weights.items():
                per_case = scores.get((m, k), {})
                if m in judges and c not in per_case:  # not judged yet (a partial run)
                    den = 0.0
                    break
                s = per_case.get(c)
                if s is not None:
                    num += w * s
                    den += w
            if den == 0.0:
                continue
            value = num / den
            if penalty is not None:
                ans = answers.get((c, k))
                if ans is None:
                    continue
                value -= penalty.weight * _penalty_amount(ans, penalty.per) / penalty.scale
            obj[k][c] = value
    # every case, None where the objective is not defined: its coverage is out of all cases
    per_k: dict[int, list[float | None]] = {k: [v.get(c) for c in cases] for k, v in obj.items()}
    common = [c for c in cases if all(c in obj[k] for k in ks)]
    base = KChoice(best_k=None, n_cases=len(common), weights=weights, penalty=label)
    if not common:
        missing = ", ".join(sorted(weights))
        base.reason = f"no case has the objective ({missing}) scored at every k"
        return base, per_k
    matrix = np.array([[obj[k][c] for c in common] for k in ks])
    means = matrix.mean(axis=1)
    best_i = int(np.flatnonzero(means >= means.max() - 1e-12)[0])
    tests = []
    for i, k in enumerate(ks):
        if i == best_i:
            tests.append(NoiseTest(k=k, diff=0.0, ci_low=0.0, ci_high=0.0))
            continue
        d, lo, hi = paired_bootstrap(matrix[i], matrix[best_i], seed=seed)
        tests.append(NoiseTest(k=k, diff=d, ci_low=lo, ci_high=hi, margin=objective.margin))
    base.best_k = ks[best_i]
    base.tests = tests
    base.within_noise = [t.k for t in tests if t.within_noise]
    return base, per_k


def _costs(data: RunView, ks: Sequence[int]) -> list[CostAtK]:
    out = []
    by_k_answers: dict[int, list[Answer]] = defaultdict(list)
    for (_, k), a in data.answers.items():
        by_k_answers[k].append(a)
    by_k_usage: dict[int, list[TokenUsage]] = defaultdict(list)
    for key in data.results:
        by_k_usage[key[1]].append(data.results.usage(key))
    counted: dict[str, int] = {}  # a chunk is in the answers of every k from its rank on
    for k in ks:
        ans = by_k_answers.get(k, [])
        res = by_k_usage.get(k, [])
        ctx = [sum(_token_count(c, counted) for c in a.contexts) for a in ans]
        gen = sum(a.usage.prompt_tokens + a.usage.completion_tokens for a in ans)
        jud = sum(u.prompt_tokens + u.completion_tokens for u in res)
        out.append(
            CostAtK(
                k=k,
                context_tokens_mean=float(np.mean(ctx)) if ctx else 0.0,
                generation_tokens=gen,
                judge_tokens=jud,
                calls=sum(a.usage.calls for a in ans) + sum(u.calls for u in res),
                cached_calls=sum(a.usage.cached_calls for a in ans)
                + sum(u.cached_calls for u in res),
                cost_usd=sum(a.usage.cost_usd for a in ans) + sum(u.cost_usd for u in res),
            )
        )
    return out


def _token_count(text: str, counted: dict[str, int]) -> int:
    """``len(tokens(text))``, each distinct text counted once into ``counted``."""
    n = counted.get(text)
    if n is None:
        n = counted[text] = len(tokens(text))
    return n
