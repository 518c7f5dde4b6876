"""Leave-one-dataset-out thresholds for the offline claim-support scores, without training:
v2, the shipped v3 model (calibrated, ``params/v3.json``) and content-word overlap, each
deciding at the cut with the best balanced accuracy on the OTHER sets' items, never on the
held-out one.

    .venv/bin/python bench/lodo_thresholds.py --items 80 --json lodo_thresholds.json

Items: for each set of ``support_data.LODO_SETS``, a seeded sample of ``--items`` test-split
items (``support_eval.sample_test``; SummEdits as whole summaries), scored as in
``support_eval`` (best window per claim, least supported claim). For each held-out set and
score: the cut that maximises the mean over the other seven sets of their balanced accuracy
(each set weighing the same), then that cut's balanced accuracy on the held-out set, with a 95%
bootstrap interval (1,000 resamples of items); the mean over sets; and per set the paired
difference v3 - v2 with its interval (the same resamples). The v3 model saw these sets' train
splits (not these test items): its column is in-domain, not a LODO model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import support_data as D
import support_eval as E

from ragjudge.judges.offline.params import MODEL_PARAMS, load_params
from ragjudge.judges.offline.supportmodel import SupportModel

METHODS = ("v2", "v3", "overlap")


def bacc(y: np.ndarray, s: np.ndarray, t: float) -> float:
    return float(((s[y == 1] >= t).mean() + (s[y == 0] < t).mean()) / 2)


def lodo_cut(held: str, ys: dict, ss: dict) -> float:
    """The cut with the best mean balanced accuracy over the sets other than ``held``."""
    others = [n for n in ys if n != held]
    cands = np.unique(np.concatenate([ss[n] for n in others]))
    means = [np.mean([bacc(ys[n], ss[n], t) for n in others]) for t in cands]
    return float(cands[int(np.argmax(means))])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--items", type=int, default=80)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    shipped = SupportModel()
    calib = load_params(MODEL_PARAMS).support_model
    assert calib is not None
    c = shipped.card
    ys: dict[str, np.ndarray] = {}
    scores: dict[str, dict[str, np.ndarray]] = {m: {} for m in METHODS}
    for name in D.LODO_SETS:
        its = E.sample_test(D.eval_items(args.data, name), args.items, args.seed)
        ys[name] = np.array([it.label for it in its])
        ov = E.overlap_scores(its)
        logit = E.model_scores(its, shipped.logits, c.top_windows, c.min_overlap)
        scores["v3"][name] = calib.proba(np.c_[logit, ov])
        scores["v2"][name] = E.v2_scores(its)
        scores["overlap"][name] = ov
        print(name, len(its), file=sys.stderr, flush=True)
    rows: dict[str, dict] = {}
    rng = np.random.default_rng(args.seed)
    for name in D.LODO_SETS:
        y = ys[name]
        cuts = {m: lodo_cut(name, ys, scores[m]) for m in METHODS}
        idx = [rng.integers(0, len(y), len(y)) for _ in range(1000)]
        idx = [i for i in idx if 0 < y[i].sum() < len(i)]
        row: dict = {"n": len(y), "supported": round(float(y.mean()), 3)}
        for m in METHODS:
            s = scores[m][name]
            vals = [bacc(y[i], s[i], cuts[m]) for i in idx]
            row[m] = [bacc(y, s, cuts[m]), *np.percentile(vals, [2.5, 97.5]).tolist()]
            row[f"{m}_cut"] = cuts[m]
        d = [
            bacc(y[i], scores["v3"][name][i], cuts["v3"])
            - bacc(y[i], scores["v2"][name][i], cuts["v2"])
            for i in idx
        ]
        row["v3_minus_v2"] = [row["v3"][0] - row["v2"][0], *np.percentile(d, [2.5, 97.5]).tolist()]
        rows[name] = row
    means = {m: float(np.mean([rows[n][m][0] for n in rows])) for m in (*METHODS, "v3_minus_v2")}
    # the mean difference's interval: resample items within every set at once
    diffs = []
    for _ in range(1000):
        per = []
        for name in D.LODO_SETS:
            y = ys[name]
            i = rng.integers(0, len(y), len(y))
            if not 0 < y[i].sum() < len(i):
                continue
            cut3, cut2 = rows[name]["v3_cut"], rows[name]["v2_cut"]
            per.append(
                bacc(y[i], scores["v3"][name][i], cut3) - bacc(y[i], scores["v2"][name][i], cut2)
            )
        diffs.append(np.mean(per))
    means_ci = [means["v3_minus_v2"], *np.percentile(diffs, [2.5, 97.5]).tolist()]
    out = {"items_per_set": args.items, "rows": rows, "means": means, "mean_diff": means_ci}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    print(table(out))


def cell(v: list[float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def table(out: dict) -> str:
    lines = [
        "| held-out set | n | supported | v2 BA | v3 BA (in-domain) | overlap BA | v3 - v2 |",
        "|---|---:|---:|---|---|---|---|",
    ]
    for name, r in out["rows"].items():
        lines.append(
            f"| {name} | {r['n']} | {r['supported']:.2f} | {cell(r['v2'])} | {cell(r['v3'])} "
            f"| {cell(r['overlap'])} | {cell(r['v3_minus_v2'])} |"
        )
    m = out["means"]
    lines.append(
        f"| **mean** | | | {m['v2']:.3f} | {m['v3']:.3f} | {m['overlap']:.3f} "
        f"| {cell(out['mean_diff'])} |"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
