"""Leave-one-dataset-out for v2's claim-support FEATURES: is the feature model's weakness away
from its fitting data (docs/judges.md, the LODO tables) a matter of where it was fitted, or of
the features themselves?

    .venv/bin/python bench/lodo_support_features.py --cache /tmp/lodo_features.pkl
    .venv/bin/python bench/lodo_support_features.py --cache /tmp/lodo_features.pkl --no-rules

For each set of ``support_data.LODO_SETS``: the same seeded ``--items`` test items as
``bench/lodo_thresholds.py`` (``support_eval.sample_test``; SummEdits as whole summaries) and a
seeded sample of ``--train`` train-split items. Each claim is read against its ``--top``
passages with the most of its content words (``windows.scored``), through the v2 judges' own
code (``support.support_matrix`` with the shipped ``params/v2.json``): the v2 probability and
the ten ``features.SUPPORT_FEATURES`` of every pair. An item's score is, as everywhere in these
benchmarks, the lowest over its claims of the best over its passages.

Then, per held-out set, a logistic regression on the features (standardised; every (set, class)
cell weighing the same) is fitted on the train items of the OTHER seven sets, at each claim's
passage with the most of its words, never on the held-out set, and scores the held-out test
items (with v2's caps for missing numbers, names and flipped negations unless ``--no-caps``;
``--no-rules`` leaves the three rule features out of the fit). Balanced accuracy (BA) per set
for: v2 at its 0.5 decision and at the cut with the best mean BA on the other sets' test items
(the cut rule of ``lodo_thresholds.py``); overlap (the share of the claim's content words in its
best passage) at that cut; the refitted model at 0.5 (its balanced fit's decision) and at that
cut. The last row is the mean over sets (each weighing the same) and, for the refit, the paired
bootstrap interval of its difference to v2 at 0.5 (1,000 resamples of items within every set).
``--cache`` keeps the features (the encoding is the slow part: about three minutes here).
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

import support_data as D
import support_eval as E

from ragjudge.judges.offline.embed import shared_cache
from ragjudge.judges.offline.features import SUPPORT_FEATURES, profile
from ragjudge.judges.offline.params import PARAMS_DIR, load_params
from ragjudge.judges.offline.support import PARTIAL_CAP, UNSUPPORTED_CAP, support_matrix
from ragjudge.judges.offline.windows import scored

F = list(SUPPORT_FEATURES)
RULES = ("num_miss", "ent_miss", "neg_mismatch")
Part = tuple[list[float], list[list[float]], list[float]]
"""One claim: v2's probability, the features and the overlap of each of its passages."""


def item_parts(item: D.Item, top: int, params: Any, cache: Any) -> list[Part]:
    out: list[Part] = []
    for claim in E.parts(item):
        best = scored(claim, item.passages)[:top]
        profiles = [profile(item.passages[k]) for k, _ in best]
        s = support_matrix([claim], profiles, params, cache)
        out.append((s.matrix[0].tolist(), s.features[0].tolist(), [o for _, o in best]))
    return out


def collect(args: argparse.Namespace) -> dict[str, dict[str, list[tuple[int, list[Part]]]]]:
    key = (args.items, args.train, args.top, args.seed)
    if args.cache and args.cache.exists():
        got = pickle.loads(args.cache.read_bytes())
        if got.get("key") == key:
            return dict(got["sets"])
    params, cache = load_params(PARAMS_DIR / "v2.json"), shared_cache()
    everything = D.load(args.data, D.LODO_SETS)
    sets: dict[str, dict[str, list[tuple[int, list[Part]]]]] = {}
    for name in D.LODO_SETS:
        test = E.sample_test(D.eval_items(args.data, name), args.items, args.seed)
        train = [i for i in everything if i.set == name and i.split == "train"]
        train = random.Random(args.seed + 1).sample(train, min(args.train, len(train)))
        sets[name] = {
            split: [(it.label, item_parts(it, args.top, params, cache)) for it in its]
            for split, its in (("test", test), ("train", train))
        }
        print(name, len(test), len(train), file=sys.stderr, flush=True)
    if args.cache:
        args.cache.write_bytes(pickle.dumps({"key": key, "sets": sets}))
    return sets


def capped(p: np.ndarray, f: np.ndarray) -> np.ndarray:
    """v2's rules (``support._capped``) on probabilities ``p`` of pairs with features ``f``."""
    num, ent, neg = (f[:, F.index(r)] for r in RULES)
    cap = np.where((num >= 1.0) | (neg > 0), UNSUPPORTED_CAP, PARTIAL_CAP)
    return np.where((num > 0) | (neg > 0) | (ent > 0), np.minimum(p, cap), p)


def bacc(y: np.ndarray, s: np.ndarray, t: float) -> float:
    return float(((s[y == 1] >= t).mean() + (s[y == 0] < t).mean()) / 2)


def lodo_cut(held: str, ys: dict[str, np.ndarray], ss: dict[str, np.ndarray]) -> float:
    others = [n for n in ys if n != held]
    cands = np.unique(np.concatenate([ss[n] for n in others]))
    means = [np.mean([bacc(ys[n], ss[n], t) for n in others]) for t in cands]
    return float(cands[int(np.argmax(means))])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data"
    )
    ap.add_argument("--items", type=int, default=80)
    ap.add_argument("--train", type=int, default=100)
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--C", type=float, default=1.0, help="inverse regularisation strength")
    ap.add_argument("--cache", type=Path)
    ap.add_argument("--no-caps", action="store_true")
    ap.add_argument("--no-rules", action="store_true")
    args = ap.parse_args()
    if not args.data.exists():
        raise SystemExit(f"{args.data}: no shared data here")

    sets = collect(args)
    names = list(sets)
    use = [i for i, f in enumerate(F) if not (args.no_rules and f in RULES)]

    def reduce(parts: list[Part], pair: Any) -> float:
        worst = np.inf
        for probs, feats, ovs in parts:
            worst = min(worst, float(np.max(pair(probs, np.array(feats), ovs))) if feats else 0.0)
        return worst

    def scores(name: str, pair: Any) -> np.ndarray:
        return np.array([reduce(parts, pair) for _, parts in sets[name]["test"]])

    ys = {n: np.array([y for y, _ in sets[n]["test"]]) for n in names}
    v2 = {n: scores(n, lambda p, f, o: np.array(p)) for n in names}
    ov = {n: scores(n, lambda p, f, o: np.array(o)) for n in names}
    refit: dict[str, dict[str, np.ndarray]] = {}
    for held in names:
        xs, ylist, ws = [], [], []
        for n in names:
            if n == held:
                continue
            rows = [(y, parts[0][1][0]) for y, parts in sets[n]["train"] if parts and parts[0][1]]
            y = np.array([r[0] for r in rows])
            xs.append(np.array([r[1] for r in rows])[:, use])
            ylist.append(y)
            ws.append(np.where(y == 1, 1 / max(y.sum(), 1), 1 / max((1 - y).sum(), 1)))
        x, y, w = np.concatenate(xs), np.concatenate(ylist), np.concatenate(ws)
        mu, sd = x.mean(0), x.std(0) + 1e-9
        lr = LogisticRegression(C=args.C, max_iter=2000).fit(
            (x - mu) / sd, y, sample_weight=w * len(y)
        )

        def pair(p: Any, f: np.ndarray, o: Any, lr: Any = lr, mu: Any = mu, sd: Any = sd) -> Any:
            q = lr.predict_proba((f[:, use] - mu) / sd)[:, 1]
            return q if args.no_caps else capped(q, f)

        refit[held] = {n: scores(n, pair) for n in names}

    cols = ("v2@0.5", "v2@cut", "overlap@cut", "refit@0.5", "refit@cut")
    table = {}
    for held in names:
        y = ys[held]
        table[held] = (
            bacc(y, v2[held], 0.5),
            bacc(y, v2[held], lodo_cut(held, ys, v2)),
            bacc(y, ov[held], lodo_cut(held, ys, ov)),
            bacc(y, refit[held][held], 0.5),
            bacc(y, refit[held][held], lodo_cut(held, ys, refit[held])),
        )
    rng = np.random.default_rng(args.seed)
    diffs = []
    for _ in range(1000):
        per = []
        for held in names:
            i = rng.integers(0, len(ys[held]), len(ys[held]))
            yi = ys[held][i]
            if 0 < yi.sum() < len(yi):
                per.append(bacc(yi, refit[held][held][i], 0.5) - bacc(yi, v2[held][i], 0.5))
        diffs.append(float(np.mean(per)))
    print("| held-out set | n | " + " | ".join(f"{c} BA" for c in cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    for held, row in table.items():
        print(f"| {held} | {len(ys[held])} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    means = np.mean(list(table.values()), axis=0)
    print("| **mean** | | " + " | ".join(f"{v:.3f}" for v in means) + " |")
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    print(f"refit@0.5 - v2@0.5, mean over sets: {means[3] - means[0]:+.3f} [{lo:+.3f}, {hi:+.3f}]")


if __name__ == "__main__":
    main()
