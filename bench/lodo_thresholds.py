"""Leave-one-dataset-out thresholds for the offline claim-support scores, without training:
v2, the shipped v3 model (calibrated, ``params/v3.json``) and content-word overlap, each
deciding at the cut with the best balanced accuracy on the OTHER sets' items, never on the
held-out one.

    .venv/bin/python bench/lodo_thresholds.py --items 80 --json lodo_thresholds.json
    .venv/bin/python bench/lodo_thresholds.py --items 80 --json lodo_thresholds.json \
        --cache lodo_scores.json --model v4=/tmp/support_v4/support.int8.onnx

Items: for each set of ``support_data.LODO_SETS``, a seeded sample of ``--items`` test-split
items (``support_eval.sample_test``; SummEdits as whole summaries), scored as in
``support_eval`` (best window per claim, least supported claim). For each held-out set and
score: the cut that maximises the mean over the other seven sets of their balanced accuracy
(each set weighing the same), then that cut's balanced accuracy on the held-out set, with a 95%
bootstrap interval (1,000 resamples of items); the mean over sets; and per set the paired
difference v3 - v2 with its interval (the same resamples). The v3 model saw these sets' train
splits (not these test items): its column is in-domain, not a LODO model.

``--model NAME=CARD`` (repeated) adds a claim-support model (a ``supportmodel.ModelCard`` file,
or a training run's ONNX file, read with the default card)
as two columns: ``NAME``, its raw best-window logit, and ``NAME+ov``, the logistic combination
of that logit and the word overlap (the form of the shipped calibration) fitted on the OTHER
seven sets' items (every set and class weighing the same), never on the held-out one; each
column's cut is chosen as above, and its paired difference to v2 is reported (to overlap when
``--base`` leaves v2 out). A model trained
without any of the eight sets (v4) is out-of-domain for all of them, so these are LODO figures.
``--cache FILE`` keeps every method's per-item scores (the v2 pass takes most of the time) and
reuses them when the items (``--items``, ``--seed``) are the same. ``--base`` chooses the
columns of v2, v3 and overlap (v2 and overlap are needed for the differences and the
"below overlap" count). ``--score-only`` fills the cache and stops (to score models in
parallel processes, one cache each, merged afterwards).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

import support_data as D
import support_eval as E

from ragjudge.judges.offline.params import MODEL_PARAMS, load_params
from ragjudge.judges.offline.supportmodel import ModelCard, SupportModel

BASE = ("v2", "v3", "overlap")


def bacc(y: np.ndarray, s: np.ndarray, t: float) -> float:
    return float(((s[y == 1] >= t).mean() + (s[y == 0] < t).mean()) / 2)


def lodo_cut(held: str, ys: dict, ss: dict) -> float:
    """The cut with the best mean balanced accuracy over the sets other than ``held``."""
    others = [n for n in ys if n != held]
    cands = np.unique(np.concatenate([ss[n] for n in others]))
    means = [np.mean([bacc(ys[n], ss[n], t) for n in others]) for t in cands]
    return float(cands[int(np.argmax(means))])


def combo_scores(held: str, ys: dict, logit: dict, ov: dict) -> dict[str, np.ndarray]:
    """Every set's P of a logistic model on (logit, overlap) fitted on the sets other than
    ``held``, each (set, class) cell weighing the same."""
    others = [n for n in ys if n != held]
    x = np.concatenate([np.c_[logit[n], ov[n]] for n in others])
    y = np.concatenate([ys[n] for n in others])
    w = np.concatenate(
        [np.where(ys[n] == 1, 1 / ys[n].sum(), 1 / (1 - ys[n]).sum()) for n in others]
    )
    lr = LogisticRegression(C=100.0).fit(x, y, sample_weight=w * len(y))
    return {n: lr.predict_proba(np.c_[logit[n], ov[n]])[:, 1] for n in ys}


def support_model(path: Path) -> SupportModel:
    """A model card, or an ONNX file run with the default card (a training run's export)."""
    if path.suffix != ".onnx":
        return SupportModel(path)
    import tempfile

    import fit_support_model as F

    return F.model_for(path, ModelCard(), Path(tempfile.mkdtemp(prefix="lodo_model_")))


def score_all(args: argparse.Namespace) -> tuple[dict, dict]:
    """Labels and per-item scores of every method (``--cache`` reused when it matches)."""
    key = {"items": args.items, "seed": args.seed}
    cache: dict = {"key": key, "labels": {}, "scores": {}}
    if args.cache and args.cache.exists():
        old = json.loads(args.cache.read_text())
        if old.get("key") == key:
            cache = old
    models = dict(m.split("=", 1) for m in args.model)
    base = args.base.split(",")
    todo = [m for m in (*base, *models) if m not in cache["scores"]]
    if todo:
        shipped = SupportModel()
        calib = load_params(MODEL_PARAMS).support_model
        assert calib is not None
        for m in todo:
            cache["scores"][m] = {}
        for name in D.LODO_SETS:
            its = E.sample_test(D.eval_items(args.data, name), args.items, args.seed)
            cache["labels"][name] = [it.label for it in its]
            ov = E.overlap_scores(its)
            for m in todo:
                if m == "overlap":
                    s = ov
                elif m == "v2":
                    s = E.v2_scores(its)
                else:
                    model = shipped if m == "v3" else support_model(Path(models[m]))
                    c = model.card
                    s = E.model_scores(its, model.logits, c.top_windows, c.min_overlap)
                    if m == "v3":
                        s = calib.proba(np.c_[s, ov])
                cache["scores"][m][name] = [float(v) for v in s]
            print(name, len(its), todo, file=sys.stderr, flush=True)
        if args.cache:
            args.cache.write_text(json.dumps(cache))
    ys = {n: np.array(v) for n, v in cache["labels"].items()}
    scores = {m: {n: np.array(v) for n, v in cache["scores"][m].items()} for m in cache["scores"]}
    return ys, scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--items", type=int, default=80)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--cache", type=Path, help="per-item scores, reused (docstring)")
    ap.add_argument("--model", action="append", default=[], help="NAME=CARD.json or .onnx")
    ap.add_argument("--score-only", action="store_true", help="fill --cache, print nothing")
    ap.add_argument("--base", default=",".join(BASE), help="of v2,v3,overlap (v3: in-domain)")
    args = ap.parse_args()

    ys, all_scores = score_all(args)
    if args.score_only:
        return
    models = [m.split("=", 1)[0] for m in args.model]
    base = [m for m in args.base.split(",") if m in all_scores]
    methods = [*base, *models, *(f"{m}+ov" for m in models)]
    scores = {m: all_scores[m] for m in (*base, *models)}
    # per held-out set: the cut of every method on the other sets (a +ov column is refitted)
    fold_scores: dict[str, dict[str, dict[str, np.ndarray]]] = {}
    for name in D.LODO_SETS:
        fold_scores[name] = dict(scores)
        for m in models:
            fold_scores[name][f"{m}+ov"] = combo_scores(name, ys, scores[m], scores["overlap"])
    rows: dict[str, dict] = {}
    rng = np.random.default_rng(args.seed)
    ref = "v2" if "v2" in methods else "overlap"  # the paired differences' reference
    diffed = [m for m in methods if m not in ("v2", "overlap")]
    for name in D.LODO_SETS:
        y = ys[name]
        fs = fold_scores[name]
        cuts = {m: lodo_cut(name, ys, fs[m]) for m in methods}
        idx = [rng.integers(0, len(y), len(y)) for _ in range(1000)]
        idx = [i for i in idx if 0 < y[i].sum() < len(i)]
        row: dict = {"n": len(y), "supported": round(float(y.mean()), 3)}
        for m in methods:
            s = fs[m][name]
            vals = [bacc(y[i], s[i], cuts[m]) for i in idx]
            row[m] = [bacc(y, s, cuts[m]), *np.percentile(vals, [2.5, 97.5]).tolist()]
            row[f"{m}_cut"] = cuts[m]
        v2 = fs[ref][name]
        for m in diffed:
            s = fs[m][name]
            d = [bacc(y[i], s[i], cuts[m]) - bacc(y[i], v2[i], cuts[ref]) for i in idx]
            row[f"{m}_minus_ref"] = [
                row[m][0] - row[ref][0],
                *np.percentile(d, [2.5, 97.5]).tolist(),
            ]
        rows[name] = row
    means = {m: float(np.mean([rows[n][m][0] for n in rows])) for m in methods}
    # the mean difference's interval: resample items within every set at once
    diffs: dict[str, list[float]] = {m: [] for m in diffed}
    for _ in range(1000):
        per: dict[str, list[float]] = {m: [] for m in diffed}
        for name in D.LODO_SETS:
            y = ys[name]
            i = rng.integers(0, len(y), len(y))
            if not 0 < y[i].sum() < len(i):
                continue
            r, fs = rows[name], fold_scores[name]
            base = bacc(y[i], fs[ref][name][i], r[f"{ref}_cut"])
            for m in diffed:
                per[m].append(bacc(y[i], fs[m][name][i], r[f"{m}_cut"]) - base)
        for m in diffed:
            diffs[m].append(float(np.mean(per[m])))
    mean_diff = {
        m: [means[m] - means[ref], *np.percentile(diffs[m], [2.5, 97.5]).tolist()] for m in diffed
    }
    below = {
        m: [n for n in rows if rows[n][m][0] < rows[n]["overlap"][0]]
        for m in methods
        if m != "overlap"
    }
    out = {
        "items_per_set": args.items,
        "methods": methods,
        "rows": rows,
        "means": means,
        "reference": ref,
        "mean_diff": mean_diff,
        "below_overlap": below,
    }
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    print(table(out))


def cell(v: list[float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def table(out: dict) -> str:
    methods = out["methods"]
    diffed = list(out["mean_diff"])
    head = [f"{m} BA" if m != "v3" else "v3 BA (in-domain)" for m in methods]
    head += [f"{m} - {out['reference']}" for m in diffed]
    lines = [
        "| held-out set | n | supported | " + " | ".join(head) + " |",
        "|---|---:|---:|" + "---|" * len(head),
    ]
    for name, r in out["rows"].items():
        cells = [cell(r[m]) for m in methods] + [cell(r[f"{m}_minus_ref"]) for m in diffed]
        lines.append(f"| {name} | {r['n']} | {r['supported']:.2f} | " + " | ".join(cells) + " |")
    m = out["means"]
    cells = [f"{m[k]:.3f}" for k in methods] + [cell(out["mean_diff"][k]) for k in diffed]
    lines.append("| **mean** | | | " + " | ".join(cells) + " |")
    lines.append(
        "| sets below overlap | | | "
        + " | ".join(
            str(len(out["below_overlap"].get(k, []))) if k != "overlap" else "-" for k in methods
        )
        + " |"
        + " |" * len(diffed)
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
