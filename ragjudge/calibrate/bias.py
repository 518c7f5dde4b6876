"""Bias probes: does the judge's score move with something people do not reward?

- Length: at a fixed human label, does a longer answer get a higher score? Within each label
  stratum (binary/ordinal: each label; continuous: quarters of [0, 1]) the judge score is
  compared with log2(answer length in tokens). Reported: the pooled within-stratum Spearman
  (strata weighted by size) and the within-stratum OLS slope of score on log2(length), i.e.
  the score change per doubling of length with the label held fixed.
- Position (pairwise judging): each pair is judged in both orders. ``flip_rate`` is the share
  of pairs whose preferred *answer* changes when the order is swapped; ``first_position_rate``
  the share of decided verdicts that pick whichever answer was shown first (0.5 = no bias).
- Self-preference: when generator and judge belong to the same model family, is the judge
  more generous than people? Residual r = judge score - human label (both on [0, 1]); reported
  the mean residual on same-family items, on other items, and their difference within human
  label strata (so a different share of good answers between the groups is no bias). "Not
  applicable" when the run does not record generator and judge models.

Every statistic is an ``Estimate`` with a 95% item bootstrap interval.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from . import metrics as m
from .join import LabelledItem
from .labels import Scale, normalise
from .resample import DEFAULT_RESAMPLES, Estimate, bootstrap_estimate


class BiasProbe(BaseModel):
    model_config = ConfigDict(extra="forbid")

    probe: Literal["length", "position", "self_preference"]
    dimension: str | None = None
    applicable: bool
    estimates: list[Estimate] = Field(default_factory=list)
    note: str | None = None


def _strata(human: np.ndarray, scale: Scale) -> np.ndarray:
    if scale == "continuous":
        return np.minimum((human * 4).astype(int), 3)
    return human.astype(int)


def _within_spearman(scores: np.ndarray, logl: np.ndarray, strata: np.ndarray) -> float:
    total, weight = 0.0, 0
    for s in np.unique(strata):
        sel = strata == s
        rho = m.spearman(scores[sel], logl[sel])
        if rho == rho:  # defined
            total += rho * int(sel.sum())
            weight += int(sel.sum())
    return total / weight if weight else float("nan")


def _within_slope(scores: np.ndarray, logl: np.ndarray, strata: np.ndarray) -> float:
    xs = logl.copy()
    ys = scores.copy()
    for s in np.unique(strata):
        sel = strata == s
        xs[sel] -= xs[sel].mean()
        ys[sel] -= ys[sel].mean()
    sxx = float((xs**2).sum())
    return float((xs * ys).sum() / sxx) if sxx > 0 else float("nan")


def length_bias(
    items: Sequence[LabelledItem],
    answer_tokens: dict[str, int],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> BiasProbe:
    """The length probe over scored items whose answer length is known."""
    dim = items[0].dimension if items else None
    use = [
        it
        for it in items
        if it.judge_score is not None and it.item_id in answer_tokens and it.scale != "pairwise"
    ]
    if len(use) < 4:
        return BiasProbe(
            probe="length",
            dimension=dim,
            applicable=False,
            note="needs >= 4 scored, labelled items with known answer text",
        )
    scale = use[0].scale
    scores = np.array([it.judge_score for it in use], float)
    logl = np.log2(np.array([max(1, answer_tokens[it.item_id]) for it in use], float))
    strata = _strata(np.array([it.human for it in use], float), scale)
    reason = "answer lengths or scores do not vary within any label"

    def on_items(
        f: Callable[[np.ndarray, np.ndarray, np.ndarray], float],
    ) -> Callable[[np.ndarray], float]:
        return lambda i: f(scores[i], logl[i], strata[i])

    return BiasProbe(
        probe="length",
        dimension=dim,
        applicable=True,
        estimates=[
            bootstrap_estimate(
                name,
                on_items(f),
                len(use),
                n_resamples=n_resamples,
                seed=seed,
                undefined_reason=reason,
            )
            for name, f in (
                ("spearman_within_label", _within_spearman),
                ("slope_per_doubling", _within_slope),
            )
        ],
    )


def position_bias(
    pref_ab: Sequence[int] | np.ndarray,
    pref_ba: Sequence[int] | np.ndarray,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> BiasProbe:
    """Position probe from verdicts in both orders: +1 = first shown wins, -1 = second, 0 = tie.

    ``pref_ab[i]`` judges pair i as (x, y); ``pref_ba[i]`` the same pair shown as (y, x).
    """
    ab = np.asarray(pref_ab, int)
    ba = np.asarray(pref_ba, int)
    if ab.size == 0 or ab.size != ba.size:
        return BiasProbe(
            probe="position",
            applicable=False,
            note="needs verdicts of the same pairs in both orders",
        )
    # Preference for x in each order: +1 in (x, y) order, and -pref in (y, x) order.
    flips = (ab != -ba).astype(float)

    def first_rate(i: np.ndarray) -> float:
        v = np.concatenate([ab[i], ba[i]])
        decided = v[v != 0]
        return float(np.mean(decided == 1)) if decided.size else float("nan")

    return BiasProbe(
        probe="position",
        applicable=True,
        estimates=[
            bootstrap_estimate(
                "flip_rate",
                lambda i: float(flips[i].mean()),
                ab.size,
                n_resamples=n_resamples,
                seed=seed,
            ),
            bootstrap_estimate(
                "first_position_rate",
                first_rate,
                ab.size,
                n_resamples=n_resamples,
                seed=seed,
                undefined_reason="every verdict is a tie",
            ),
        ],
    )


PairwiseJudge = Callable[[str, str, str], Awaitable[int]]
"""async (question, first answer, second answer) -> +1 (first better), -1 (second), 0 (tie)."""


async def probe_position(
    judge: PairwiseJudge,
    pairs: Sequence[tuple[str, str, str]],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> BiasProbe:
    """Judge each (question, x, y) as (x, y) and as (y, x) and run ``position_bias``."""
    ab = await asyncio.gather(*(judge(q, x, y) for q, x, y in pairs))
    ba = await asyncio.gather(*(judge(q, y, x) for q, x, y in pairs))
    return position_bias(list(ab), list(ba), n_resamples=n_resamples, seed=seed)


_FAMILY_ALIASES = {"o": "gpt", "chatgpt": "gpt", "text": "gpt", "meta": "llama"}


def model_family(model: str) -> str:
    """Model family: ``gpt-4o-mini`` -> gpt, ``openai/o3`` -> gpt, ``Llama-3`` -> llama."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    match = re.match(r"[a-z]+", name)
    family = match.group(0) if match else name
    return _FAMILY_ALIASES.get(family, family)


def _stratified_gap(resid: np.ndarray, same: np.ndarray, strata: np.ndarray) -> float:
    """Within each label stratum holding both kinds of item, mean residual of the judge's
    family minus that of the others, weighted by the stratum's size (NaN when none holds
    both)."""
    total, weight = 0.0, 0
    for s in np.unique(strata):
        cell = strata == s
        a, b = cell & same, cell & ~same
        if a.any() and b.any():
            total += (resid[a].mean() - resid[b].mean()) * int(cell.sum())
            weight += int(cell.sum())
    return total / weight if weight else float("nan")


def self_preference(
    items: Sequence[LabelledItem],
    generator_model: dict[str, str],
    judge_model: str | None,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> BiasProbe:
    """Self-preference probe; ``generator_model`` maps item id -> generating model."""
    dim = items[0].dimension if items else None
    if not judge_model or not generator_model:
        return BiasProbe(
            probe="self_preference",
            dimension=dim,
            applicable=False,
            note="not applicable: the run records no generator and judge models",
        )
    jf = model_family(judge_model)
    use = [
        it
        for it in items
        if it.judge_score is not None and it.item_id in generator_model and it.scale != "pairwise"
    ]
    if not use:
        return BiasProbe(
            probe="self_preference",
            dimension=dim,
            applicable=False,
            note="no scored, labelled items with a known generator",
        )
    resid = np.array(
        [float(it.judge_score or 0.0) - normalise(it.human, it.scale) for it in use], float
    )
    same = np.array([model_family(generator_model[it.item_id]) == jf for it in use])
    n = len(use)

    strata = _strata(np.array([it.human for it in use], float), use[0].scale)

    def mean_where(mask: np.ndarray) -> Callable[[np.ndarray], float]:
        def stat(i: np.ndarray) -> float:
            sel = mask[i]
            return float(resid[i][sel].mean()) if sel.any() else float("nan")

        return stat

    probes: list[tuple[str, Callable[[np.ndarray], float], str]] = [
        (
            "residual_same_family",
            mean_where(same),
            f"no item generated by the judge's family ({jf})",
        ),
        (
            "residual_other_family",
            mean_where(~same),
            "every item was generated by the judge's family",
        ),
        (
            "self_preference_gap",
            lambda i: _stratified_gap(resid[i], same[i], strata[i]),
            "needs items from both the judge's family and another family",
        ),
    ]
    ests = [
        bootstrap_estimate(
            name, stat, n, n_resamples=n_resamples, seed=seed, undefined_reason=reason
        )
        for name, stat, reason in probes
    ]
    return BiasProbe(
        probe="self_preference",
        dimension=dim,
        applicable=True,
        estimates=ests,
        note=f"judge family {jf}; {int(same.sum())} of {n} items generated by that family",
    )
