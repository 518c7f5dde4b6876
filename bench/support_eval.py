"""Scoring claim-support items with the support model, the v2 offline judge and content-word
overlap, and the statistics the support benchmarks print (shared by bench/fit_support_model.py
and bench/lodo_support_model.py).

An item's score for every method: for each of its claims (a SummEdits summary's sentences, else
the one claim) the best score over its passages, then the lowest over its claims (a summary is
supported when every sentence is).
- model: max over the claim's ``top_windows`` windows by overlap (as the judges run it);
- v2: the v2 offline support probability (``support.support_matrix`` with the shipped
  ``params/v2.json``), best over the same windows;
- overlap: the share of the claim's content words in its best window.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np
from sklearn.metrics import balanced_accuracy_score, roc_auc_score
from support_data import Item

from ragjudge.judges.offline.supportmodel import NO_EVIDENCE
from ragjudge.judges.offline.windows import overlap, scored, stems


def parts(item: Item) -> list[str]:
    return item.parts or [item.claim]


def model_scores(
    items: Sequence[Item], logits: Callable, top: int, min_overlap: float = 0.0
) -> np.ndarray:
    """Per item: min over claims of the max logit over the top windows (a window with less
    than ``min_overlap`` of the claim's words is not scored: ``NO_EVIDENCE``, as the judges)."""
    pairs: list[tuple[str, str]] = []
    owner: list[tuple[int, int]] = []
    for n, it in enumerate(items):
        for m, claim in enumerate(parts(it)):
            for k, share in scored(claim, it.passages)[:top]:
                if share >= min_overlap:
                    pairs.append((claim, it.passages[k]))
                    owner.append((n, m))
    values = logits(pairs)
    best = {(n, m): NO_EVIDENCE for n, it in enumerate(items) for m in range(len(parts(it)))}
    for key, v in zip(owner, values, strict=True):
        best[key] = max(best[key], float(v))
    out = np.full(len(items), np.inf)
    for (n, _), v in best.items():
        out[n] = min(out[n], v)
    return out


def overlap_scores(items: Sequence[Item]) -> np.ndarray:
    return np.array(
        [min(max(overlap(stems(c), p) for p in it.passages) for c in parts(it)) for it in items]
    )


def v2_scores(items: Sequence[Item]) -> np.ndarray:
    from ragjudge.judges.offline.embed import shared_cache
    from ragjudge.judges.offline.features import profile
    from ragjudge.judges.offline.params import PARAMS_DIR, load_params
    from ragjudge.judges.offline.support import support_matrix

    params = load_params(PARAMS_DIR / "v2.json")
    cache = shared_cache()
    out = []
    for it in items:
        m = support_matrix(parts(it), [profile(p) for p in it.passages], params, cache).matrix
        out.append(float(m.max(axis=1).min()) if m.size else 0.0)
    return np.array(out)


def sample_test(items: Sequence[Item], limit: int, seed: int) -> list[Item]:
    """Up to ``limit`` test-split items, a seeded random sample (all when fewer)."""
    test = [i for i in items if i.split == "test"]
    if len(test) <= limit:
        return test
    return random.Random(seed).sample(test, limit)


def boot(
    y: np.ndarray, s: np.ndarray, stat: Callable, n: int = 1000, seed: int = 0
) -> tuple[float, float, float]:
    """(value, 2.5%, 97.5%) of ``stat(y, s)`` over bootstrap resamples of items."""
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n):
        idx = rng.integers(0, len(y), len(y))
        if len(set(y[idx])) < 2:
            continue
        vals.append(stat(y[idx], s[idx]))
    return float(stat(y, s)), float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))


def auroc(y: np.ndarray, s: np.ndarray) -> float:
    return float(roc_auc_score(y, s))


def bacc_at(threshold: float) -> Callable:
    def stat(y: np.ndarray, s: np.ndarray) -> float:
        return float(balanced_accuracy_score(y, (s >= threshold).astype(int)))

    return stat


def best_threshold(y: np.ndarray, s: np.ndarray, w: np.ndarray | None = None) -> float:
    """The cut on ``s`` with the best (weighted) balanced accuracy."""
    cands = np.unique(s)
    best, best_t = -1.0, float(cands[0])
    wt = np.ones_like(s) if w is None else w
    pos, neg = y == 1, y == 0
    for t in cands:
        pred = s >= t
        tpr = wt[pos & pred].sum() / max(wt[pos].sum(), 1e-9)
        tnr = wt[neg & ~pred].sum() / max(wt[neg].sum(), 1e-9)
        if (tpr + tnr) / 2 > best:
            best, best_t = (tpr + tnr) / 2, float(t)
    return best_t


def fmt(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"
