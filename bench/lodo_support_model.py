"""Leave-one-dataset-out (LODO) over the shared claim-support sets: the shipped model's recipe
trained without each set in turn, beside the v2 offline judge, content-word overlap and the
shipped model, on the same items.

    .venv/bin/python bench/lodo_support_model.py --work /tmp/lodo --json lodo.json
    .venv/bin/python bench/lodo_support_model.py --work /tmp/lodo --json lodo.json --table

For each set of ``support_data.LODO_SETS``: ``bench/train_support_model.py --exclude SET``
(the shipped recipe: same seed, freeze, learning rate, passes and windows, on ``--per-set``
pairs per training set plus ``--hard`` made-up hard negatives, ``--epochs`` passes; smaller
than the shipped run so the eight folds fit the 2 cores), exported to int8 ONNX, then scored
on the held-out set's test split (a seeded sample of ``--items`` items; each claim against its best
``top_windows`` windows by overlap, as the judges run it). A finished fold is reused, so the
command resumes after a crash. Statistics with 95% bootstrap intervals (1,000 resamples of
items): AUROC and balanced accuracy (BA). Thresholds are never fitted on the held-out set: the
fold model at logit 0 (it is trained on balanced data), v2 at its decision threshold 0.5,
overlap at the cut with the best BA on the other sets' training pairs, the shipped model at its
calibrated decision (p >= 0.5, ``params/v3.json``), and the fold model calibrated as the
shipped one is (``fit_support_model.calibrate``: logit and word overlap, its cut, fitted on the
validation split of the fold's training sets only, ``--val-limit`` items per set). Beside each
score's BA, its CEILING: the best BA any threshold reaches on the held-out items themselves
(the threshold chosen on the test items, so not a measure of the method; it bounds what any
calibration of that ranking could reach, and so separates a weak ranking from a threshold
that does not transfer). The SHIPPED
model is not a LODO model: it was trained on every set's train split, so on these test splits
it is in-domain (other documents or claims of the same sets), and is reported as such.
``--table`` prints the markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fit_support_model as F
import support_data as D
import support_eval as E
import train_support_model as T

from ragjudge.judges.offline.params import MODEL_PARAMS, load_params
from ragjudge.judges.offline.supportmodel import ModelCard, SupportModel
from ragjudge.judges.offline.windows import overlap, stems

HERE = Path(__file__).resolve().parent
COLS = ("fold", "calibrated", "v2", "overlap", "shipped")


def train_fold(name: str, work: Path, args: argparse.Namespace) -> Path:
    """The fold's int8 ONNX file, trained and exported unless it exists."""
    out = work / f"without-{name}"
    onnx = out / "support.int8.onnx"
    if onnx.exists():
        return onnx
    base = [sys.executable, str(HERE / "train_support_model.py"), "--out", str(out)]
    opts = ["--exclude", name, "--per-set", str(args.per_set), "--hard", str(args.hard)]
    opts += ["--epochs", str(args.epochs)]
    subprocess.run([*base, *opts, "--resume", "--max-minutes", "0"], check=True)
    subprocess.run([*base, "--export"], check=True)
    return onnx


def score_fold(
    name: str, onnx: Path, its: list[D.Item], pool, val_all, shipped: SupportModel, args
) -> dict:
    card = ModelCard()
    model = F.model_for(onnx, card, onnx.parent / "scoring")
    fold_s = E.model_scores(its, model.logits, card.top_windows, card.min_overlap)
    y = np.array([it.label for it in its])
    ov = E.overlap_scores(its)
    val = [i for i in val_all if i.set != name]
    cal = F.calibrate(val, E.model_scores(val, model.logits, card.top_windows, card.min_overlap))
    fold_p = cal.proba(fold_s, ov)
    keep = [p for p in pool if p[3] != name]
    pool_ov = np.array([overlap(stems(p[0]), p[1]) for p in keep])
    ov_t = E.best_threshold(np.array([p[2] for p in keep]), pool_ov)
    calib = load_params(MODEL_PARAMS).support_model
    assert calib is not None, "params/v3.json has no claim-support calibration"
    c = shipped.card
    logit = E.model_scores(its, shipped.logits, c.top_windows, c.min_overlap)
    ship = calib.proba(np.c_[logit, E.overlap_scores(its)])
    row = {
        "n": len(its),
        "supported_share": round(float(y.mean()), 3),
        "fold_auroc": E.boot(y, fold_s, E.auroc),
        "fold_bacc": E.boot(y, fold_s, E.bacc_at(0.0)),
        "calibrated_auroc": E.boot(y, fold_p, E.auroc),
        "calibrated_bacc": E.boot(y, fold_p, E.bacc_at(cal.cut)),
        "overlap_auroc": E.boot(y, ov, E.auroc),
        "overlap_bacc": E.boot(y, ov, E.bacc_at(ov_t)),
        "calibrated_ceiling": ceiling(y, fold_p),
        "overlap_ceiling": ceiling(y, ov),
        "shipped_auroc": E.boot(y, ship, E.auroc),
        "shipped_bacc": E.boot(y, ship, E.bacc_at(0.5)),
    }
    if not args.no_v2:
        v2 = E.v2_scores(its)
        row["v2_auroc"] = E.boot(y, v2, E.auroc)
        row["v2_bacc"] = E.boot(y, v2, E.bacc_at(0.5))
        row["v2_ceiling"] = ceiling(y, v2)
    return row


def ceiling(y: np.ndarray, s: np.ndarray) -> float:
    """The best balanced accuracy of ``s`` at any threshold, chosen on these items."""
    return round(E.bacc_at(E.best_threshold(y, s))(y, s), 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", required=True, help="folder for the fold models (reused)")
    ap.add_argument("--json", required=True)
    ap.add_argument("--per-set", type=int, default=500)
    ap.add_argument("--hard", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--items", type=int, default=150, help="test items per held-out set")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument(
        "--val-limit", type=int, default=250, help="validation items per set (fold calibration)"
    )
    ap.add_argument("--sets", default=",".join(D.LODO_SETS))
    ap.add_argument("--no-v2", action="store_true", help="skip the (slow) v2 column")
    ap.add_argument("--table", action="store_true", help="print the table of --json")
    args = ap.parse_args()
    path = Path(args.json)
    if args.table:
        table(json.loads(path.read_text()))
        return
    work = Path(args.work)
    root = T.shared_data()
    t0 = time.time()
    pool, _ = T.sample(D.load(root), args.per_set, args.hard, random.Random(args.seed))
    data = json.loads(path.read_text()) if path.exists() else {"rows": {}}
    data["args"] = vars(args)
    shipped = SupportModel()
    val_all = F.val_items(root, D.SETS, args.val_limit)  # read once; each fold drops its set
    for name in args.sets.split(","):
        if name in data["rows"]:
            continue
        t1 = time.time()
        onnx = train_fold(name, work, args)
        its = E.sample_test(D.eval_items(root, name), args.items, args.seed)
        data["rows"][name] = row = score_fold(name, onnx, its, pool, val_all, shipped, args)
        data["means"] = means_of(data["rows"])
        path.write_text(json.dumps(data, indent=1))
        print(
            f"{name}: n={row['n']} fold AUROC {E.fmt(row['fold_auroc'])} BA "
            f"{E.fmt(row['fold_bacc'])} | overlap {E.fmt(row['overlap_auroc'])} "
            f"({time.time() - t1:.0f}s)",
            flush=True,
        )
    data["seconds"] = round(time.time() - t0)
    path.write_text(json.dumps(data, indent=1))
    table(data)


STATS = ("auroc", "bacc", "ceiling")
"""The statistics of each score, in the table's column order."""


def means_of(rows: dict) -> dict[str, float]:
    keys = {k for r in rows.values() for k in r if k.endswith(STATS)}
    return {
        k: round(float(np.mean([value(r[k]) for r in rows.values() if k in r])), 3)
        for k in sorted(keys)
    }


def value(v: float | list[float]) -> float:
    """A statistic's point value (a bootstrapped one is stored as [value, low, high])."""
    return v if isinstance(v, float) else v[0]


def table(data: dict) -> None:
    head = " | ".join(f"{c} {m}" for c in COLS for m in STATS)
    print(f"| held-out set | n | supported | {head} |")
    print("|" + "---|" * (3 + len(STATS) * len(COLS)))
    for name, row in data["rows"].items():
        cells = [cell(row.get(f"{c}_{m}")) for c in COLS for m in STATS]
        print(f"| {name} | {row['n']} | {row['supported_share']:.2f} | " + " | ".join(cells) + " |")
    m = data["means"]
    means = [f"{m[f'{c}_{k}']:.3f}" if f"{c}_{k}" in m else "-" for c in COLS for k in STATS]
    print("| mean | | | " + " | ".join(means) + " |")


def cell(v: float | list[float] | None) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if isinstance(v, float) else E.fmt((v[0], v[1], v[2]))


if __name__ == "__main__":
    main()
