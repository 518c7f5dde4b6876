"""Calibrate the trained claim-support model, choose fp32 or int8, and install it in the package.

    .venv/bin/python bench/fit_support_model.py --run /tmp/support_run [--install]

On the VALIDATION split of the training sets (bench/support_data.py; never a test split, never
ExpertQA, WikiEval or HaluQuestQA), each item scored as the judges score it (best of the top
windows, bench/support_eval.py), every set and class weighing the same:
1. both ONNX files (fp32, int8) are scored; AUROC per set is printed; int8 is installed when its
   mean AUROC is within 0.01 of fp32's (fp32, 90 MB, is over the package's 30 MB limit), else
   the command stops;
2. calibration ``P = sigmoid(a * logit + c * overlap + b)`` (weighted logistic regression on the
   best-window logit and the claim's word overlap with its best window, ``XENC_FEATURES``;
   both coefficients must come out positive, else the command stops);
3. the decision cut ``t``: the P with the best weighted balanced accuracy; it is folded into the
   intercept (``b - log(t / (1 - t))``), so p >= 0.5 is the decision, as for every offline model.
``--install`` copies the chosen file to ragjudge/judges/offline/model/support.onnx, writes the
model card ``support.json`` (training mix, these figures) beside it, and writes
``params/v3.json``: the v2 parameters plus this ``xenc`` calibration (opt-in:
``RAGJUDGE_OFFLINE_PARAMS``). ``--version v4`` installs a successor beside v3 instead:
``model/support-v4.onnx``, its card ``support-v4.json`` and ``params/v4.json`` (whose
``support_card`` names that card).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import support_data as D
import support_eval as E
from sklearn.linear_model import LogisticRegression

from ragjudge.judges.offline.features import XENC_FEATURES
from ragjudge.judges.offline.params import (
    MODEL_PARAMS,
    PARAMS_DIR,
    LogisticModel,
    Params,
    load_params,
)
from ragjudge.judges.offline.supportmodel import META_FILE, ModelCard, SupportModel


def model_for(onnx: Path, card: ModelCard, tmp: Path) -> SupportModel:
    """A SupportModel over ``onnx`` with ``card`` (written beside a copy in ``tmp``)."""
    tmp.mkdir(parents=True, exist_ok=True)
    target = tmp / onnx.name
    if not target.exists():
        os.symlink(onnx.resolve(), target)
    meta = tmp / f"{onnx.stem}.json"
    meta.write_text(card.model_copy(update={"model_file": onnx.name}).model_dump_json())
    return SupportModel(meta)


def weights(items: list[D.Item]) -> np.ndarray:
    """Every (set, class) cell weighs the same in total."""
    cells: dict[tuple[str, int], int] = {}
    for it in items:
        cells[(it.set, it.label)] = cells.get((it.set, it.label), 0) + 1
    return np.array([1.0 / cells[(it.set, it.label)] for it in items]) * len(items) / len(cells)


def val_items(root: Path, sets: Sequence[str], limit: int) -> list[D.Item]:
    """The validation items of ``sets``: a seeded sample of at most ``limit`` per set."""
    items: list[D.Item] = []
    for name in sets:
        val = [i for i in D.eval_items(root, name) if i.split == "val"]
        as_test = [i.__class__(**{**i.__dict__, "split": "test"}) for i in val]
        items.extend(E.sample_test(as_test, limit, seed=0))
    return items


class Calibration(NamedTuple):
    """``P = sigmoid(coef[0] * logit + coef[1] * overlap + b)``, decision at ``P >= cut``."""

    coef: list[float]
    b: float
    cut: float

    def proba(self, logit: np.ndarray, overlap: np.ndarray) -> np.ndarray:
        z = self.coef[0] * logit + self.coef[1] * overlap + self.b
        return np.asarray(1.0 / (1.0 + np.exp(-z)))


def calibrate(items: list[D.Item], logits: np.ndarray) -> Calibration:
    """Steps 2 and 3 of the module docstring on ``items`` scored ``logits``."""
    y = np.array([i.label for i in items])
    w = weights(items)
    x = np.c_[logits, E.overlap_scores(items)]
    lr = LogisticRegression(C=100.0).fit(x, y, sample_weight=w)
    coef, b = [float(v) for v in lr.coef_[0]], float(lr.intercept_[0])
    return Calibration(coef, b, E.best_threshold(y, lr.predict_proba(x)[:, 1], w))


def with_model(
    v2: Params, xenc: LogisticModel, figures: dict, version: str = "v3", card: str = META_FILE.name
) -> Params:
    """``params/v3.json`` (or ``VERSION.json``): every model of ``v2`` plus the calibration
    ``xenc`` of the claim-support model of ``card`` (its validation ``figures`` in the
    provenance)."""
    return Params(
        version=version,
        description=f"v2 plus the calibration (xenc) of the claim-support model {card}",
        models={**v2.models, "xenc": xenc},
        support_card=card,
        provenance={
            **v2.provenance,
            "fitted_models": sorted({*v2.provenance["fitted_models"], "xenc"}),
            "xenc": figures,
        },
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", required=True, help="the training output folder")
    ap.add_argument("--limit", type=int, default=250, help="validation items per set")
    ap.add_argument("--install", action="store_true")
    ap.add_argument("--version", default="v3", help="v3: support.onnx; else support-VERSION")
    args = ap.parse_args()
    run = Path(args.run)
    card = ModelCard()
    root = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    items = val_items(Path(os.environ.get("RAGJUDGE_SHARED_DATA", root)), D.SETS, args.limit)
    y = np.array([i.label for i in items])
    tmp = Path(tempfile.mkdtemp(prefix="support_fit_"))
    scores: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    for variant in ("fp32", "int8"):
        m = model_for(run / f"support.{variant}.onnx", card, tmp)
        t0 = time.time()
        scores[variant] = E.model_scores(items, m.logits, card.top_windows, card.min_overlap)
        seconds[variant] = time.time() - t0
    masks = {n: np.array([i.set == n for i in items]) for n in sorted({i.set for i in items})}
    per_set: dict[str, dict[str, float]] = {}
    for variant, s in scores.items():
        per_set[variant] = {n: round(E.auroc(y[m], s[m]), 4) for n, m in masks.items()}
        mean = np.mean(list(per_set[variant].values()))
        per_set[variant]["mean"] = round(float(mean), 4)
        print(f"{variant}: val AUROC mean {mean:.3f} ({seconds[variant]:.0f}s) {per_set[variant]}")
    if per_set["int8"]["mean"] < per_set["fp32"]["mean"] - 0.01:
        sys.exit("int8 loses more than 0.01 of mean AUROC; fp32 is over the 30 MB package limit")
    chosen = "int8"
    cal = calibrate(items, scores[chosen])
    coef, b, t_sup = cal.coef, cal.b, cal.cut
    if min(coef) < 0:
        sys.exit(f"a calibration coefficient is negative ({coef}): the judge would not be monotone")
    p = cal.proba(scores[chosen], E.overlap_scores(items))
    bacc = E.bacc_at(t_sup)(y, p)
    both = {n: E.auroc(y[m], p[m]) for n, m in masks.items()}
    print(
        f"chosen {chosen}; calibration logit {coef[0]:.4f} overlap {coef[1]:.4f} b={b:.4f}; "
        f"decision cut {t_sup:.3f}; val balanced accuracy (pooled) {bacc:.3f}; "
        f"val AUROC mean with overlap {np.mean(list(both.values())):.3f}"
    )
    if not args.install:
        return
    stem = "support" if args.version == "v3" else f"support-{args.version}"
    meta_file = META_FILE.parent / f"{stem}.json"
    params_file = MODEL_PARAMS if args.version == "v3" else PARAMS_DIR / f"{args.version}.json"
    meta_file.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run / f"support.{chosen}.onnx", meta_file.parent / f"{stem}.onnx")
    figures = {
        "validation_auroc": per_set,
        "chosen": chosen,
        "validation_items": len(items),
        "validation_balanced_accuracy": round(bacc, 4),
        "calibration": {"coef": [round(c, 6) for c in coef], "b": round(b, 6), "cut": t_sup},
        "validation_auroc_calibrated": {n: round(v, 4) for n, v in both.items()},
        "command": f"bench/fit_support_model.py --run RUN --install --version {args.version}",
    }
    card = ModelCard(
        model_file=f"{stem}.onnx",
        training=json.loads((run / "mix.json").read_text()),
        figures=figures,
    )
    meta_file.write_text(json.dumps(card.model_dump(), indent=1) + "\n")
    xenc = LogisticModel(
        features=list(XENC_FEATURES),
        coef=[round(c, 6) for c in coef],
        intercept=round(b - math.log(t_sup / (1.0 - t_sup)), 6),
        mean=[0.0, 0.0],
        scale=[1.0, 1.0],
        fitted_on=f"{len(items)} validation claims of the claim-support sets (cut folded)",
        cv={"n": len(items), "auroc": round(E.auroc(y, p), 4), "balanced_accuracy": round(bacc, 4)},
    )
    v2 = load_params(PARAMS_DIR / "v2.json")
    with_model(v2, xenc, figures, args.version, meta_file.name).save(params_file)
    print(f"installed {meta_file.parent / card.model_file} and {params_file}")


if __name__ == "__main__":
    main()
