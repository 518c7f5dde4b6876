"""Calibrate the trained claim-support model, choose fp32 or int8, and install it in the package.

    .venv/bin/python bench/fit_support_model.py --run /tmp/support_run [--install]

On the VALIDATION split of the training sets (bench/support_data.py; never a test split, never
ExpertQA, WikiEval or HaluQuestQA), each item scored as the judges score it (best of the top
windows, bench/support_eval.py), every set and class weighing the same:
1. both ONNX files (fp32, int8) are scored; AUROC per set is printed; int8 is kept when its mean
   AUROC is within 0.01 of fp32's (it is 4x smaller and faster);
2. Platt scaling ``P = sigmoid(a * logit + b)`` (weighted logistic regression on the logit);
3. thresholds: ``supported`` = the P cut with the best weighted balanced accuracy (supported vs
   the rest); ``partial`` = the cut below it with the best balanced accuracy between
   'partially supported' and 'not supported' items (WiCE, LFQA, Factcheck-GPT raw labels).
``--install`` copies the chosen file to ragjudge/judges/offline/model/support.onnx and writes
``support.json`` (model card: calibration, thresholds, training mix, these figures).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import support_data as D
import support_eval as E
from sklearn.linear_model import LogisticRegression

from ragjudge.judges.offline.supportmodel import META_FILE, ModelCard, SupportModel

PARTIAL_RAW = {"partially_supported", "partially", "partially-support"}
NOT_RAW = {"not_supported", "refute", "irrelevant"}


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", required=True, help="the training output folder")
    ap.add_argument("--limit", type=int, default=250, help="validation items per set")
    ap.add_argument("--install", action="store_true")
    args = ap.parse_args()
    run = Path(args.run)
    card = ModelCard()
    items: list[D.Item] = []
    root = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    root = Path(os.environ.get("RAGJUDGE_SHARED_DATA", root))
    for name in D.SETS:
        val = [i for i in D.eval_items(root, name) if i.split == "val"]
        items.extend(
            E.sample_test(
                [i.__class__(**{**i.__dict__, "split": "test"}) for i in val], args.limit, seed=0
            )
        )
    y = np.array([i.label for i in items])
    w = weights(items)
    tmp = Path(tempfile.mkdtemp(prefix="support_fit_"))
    scores: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    for variant in ("fp32", "int8"):
        m = model_for(run / f"support.{variant}.onnx", card, tmp)
        t0 = time.time()
        scores[variant] = E.model_scores(items, m.logits, card.top_windows)
        seconds[variant] = time.time() - t0
    sets = sorted({i.set for i in items})
    per_set: dict[str, dict[str, float]] = {}
    for variant, s in scores.items():
        per_set[variant] = {}
        for name in sets:
            mask = np.array([i.set == name for i in items])
            per_set[variant][name] = round(E.auroc(y[mask], s[mask]), 4)
        mean = np.mean(list(per_set[variant].values()))
        per_set[variant]["mean"] = round(float(mean), 4)
        print(f"{variant}: val AUROC mean {mean:.3f} ({seconds[variant]:.0f}s) {per_set[variant]}")
    chosen = "int8" if per_set["int8"]["mean"] >= per_set["fp32"]["mean"] - 0.01 else "fp32"
    s = scores[chosen]
    lr = LogisticRegression(C=100.0).fit(s.reshape(-1, 1), y, sample_weight=w)
    a, b = float(lr.coef_[0][0]), float(lr.intercept_[0])
    p = 1.0 / (1.0 + np.exp(-(a * s + b)))
    t_sup = E.best_threshold(y, p, w)
    raw = np.array([i.raw for i in items])
    below = (p < t_sup) & (np.isin(raw, list(PARTIAL_RAW)) | np.isin(raw, list(NOT_RAW)))
    is_partial = np.isin(raw, list(PARTIAL_RAW)).astype(int)
    t_part = E.best_threshold(is_partial[below], p[below]) if below.sum() > 10 else t_sup / 2
    t_part = float(min(t_part, t_sup - 0.01))
    bacc = E.bacc_at(t_sup)(y, p)
    print(
        f"chosen {chosen}; calibration a={a:.4f} b={b:.4f}; thresholds supported {t_sup:.3f}"
        f" partial {t_part:.3f}; val balanced accuracy (pooled) {bacc:.3f}"
    )
    if not args.install:
        return
    META_FILE.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run / f"support.{chosen}.onnx", META_FILE.parent / "support.onnx")
    mix = json.loads((run / "mix.json").read_text())
    final = ModelCard(
        calibration={"a": round(a, 6), "b": round(b, 6)},
        thresholds={"supported": round(t_sup, 4), "partial": round(t_part, 4)},
        training=mix,
        figures={
            "validation_auroc": per_set,
            "chosen": chosen,
            "validation_items": len(items),
            "validation_balanced_accuracy": round(bacc, 4),
            "command": "bench/fit_support_model.py --run RUN --install",
        },
    )
    META_FILE.write_text(json.dumps(final.model_dump(), indent=1) + "\n")
    print(f"installed {META_FILE.parent / 'support.onnx'}")


if __name__ == "__main__":
    main()
