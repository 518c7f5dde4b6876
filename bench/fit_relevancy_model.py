"""Install the trained answer-relevancy cross-encoder and fit its calibration ``xrel``.

    .venv/bin/python bench/fit_relevancy_model.py --run /tmp/relevancy_run [--install] [--write]

``--install`` copies ``RUN/relevancy.int8.onnx`` (bench/train_relevancy_model.py ``--export``)
to ``ragjudge/judges/offline/model/relevancy.onnx`` and writes the card ``relevancy.json``
(the run's ``mix.json``: data, seed, command; and the figures below).

Calibration (``fit.featurise`` and ``fit.fit_logistic`` on the answer-relevancy rows of
bench/fit_offline_judges.py, dev parts only: SQuAD dev articles ``squad_rows`` and WikiEval
answer-relevance dev answers, each source weighing the same, ``balanced``; HaluQuestQA is left
out: its labels mark a span anywhere in a long answer, and its answers take minutes to
encode): ``xrel`` = sigmoid(a * the cross-encoder's logit + c * the feature model's logit + b),
a, c >= 0, shrunk towards zero, lambda by grouped CV. (Shrunk towards the feature model alone,
a = 0 and c = 1, the one-standard-error rule kept that prior: CV log loss 0.5279 against
0.5282.) The SQuAD dev rows are the articles the cross-encoder was trained on, so its logit is
over-confident there; WikiEval was not trained on.
Its cross-validated figures are printed; ``--write`` puts ``xrel`` into ``params/v2.json`` and
``params/v3.json`` (every other key unchanged) or, with ``--out FILE``, writes v2 plus ``xrel``
there instead, to be measured first (bench/bench_relevancy.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit_offline_judges import (
    DiskEncoder,
    balanced,
    shared_data,
    squad_rows,
    wikieval_rows,
)

from ragjudge.home import state_path
from ragjudge.judges.offline import OfflineAnswerRelevancyJudge
from ragjudge.judges.offline import labelsets as L
from ragjudge.judges.offline.embed import EmbeddingCache
from ragjudge.judges.offline.features import FEATURE_SIGNS, XREL_FEATURES
from ragjudge.judges.offline.fit import featurise, fit_logistic
from ragjudge.judges.offline.params import (
    DEFAULT_PARAMS,
    MODEL_PARAMS,
    LogisticModel,
    load_params,
)
from ragjudge.judges.offline.supportmodel import RELEVANCY_META, PairCard
from ragjudge.schema import JudgeInput

PRIOR = LogisticModel(
    features=list(XREL_FEATURES),
    coef=[0.0, 1.0],
    intercept=0.0,
    mean=[0.0, 0.0],
    scale=[1.0, 1.0],
    fitted_on="prior: the feature model alone",
)


def install(run: Path) -> None:
    meta = json.loads((run / "mix.json").read_text())
    shutil.copyfile(run / "relevancy.int8.onnx", RELEVANCY_META.parent / "relevancy.onnx")
    card = PairCard(model_file="relevancy.onnx", max_len=meta["max_len"], training=meta)
    RELEVANCY_META.write_text(json.dumps(card.model_dump(), indent=1) + "\n")
    print(f"installed {RELEVANCY_META.parent / 'relevancy.onnx'} and {RELEVANCY_META}")


def calibrate() -> LogisticModel:
    root = shared_data()
    pairs = [p for p in L.wikieval_pairs(root / "wikieval") if p.part == "dev"]
    sources = {
        "wikieval": [r for r in wikieval_rows(pairs) if r.dimension == "answer_relevancy"],
        "squad": squad_rows(root),
    }
    base = load_params(DEFAULT_PARAMS)
    base = base.model_copy(update={"models": {**base.models, "xrel": PRIOR}})
    rows = balanced(sources)
    enc = DiskEncoder(state_path("bench", "offline_embeddings"))
    cache = EmbeddingCache(enc, max_items=10_000_000)
    try:
        # encode every text the features need in one batch (the judge's dry pass lists them)
        OfflineAnswerRelevancyJudge(params=base, cache=cache).prepare(
            [
                JudgeInput(id=str(i), question=r.question, answer=r.answer, contexts=[])
                for i, r in enumerate(rows)
            ]
        )
        d = featurise(rows, base, cache)["xrel"]
    finally:
        enc.save()
    model = fit_logistic(
        d.x,
        d.y,
        XREL_FEATURES,
        groups=d.groups,
        weights=d.weights,
        signs=FEATURE_SIGNS["xrel"],
        decision=False,
        fitted_on=f"{len(d.y)} labelled rows",
    )
    print(f"xrel: coef {model.coef} intercept {model.intercept:.3f} cv {model.cv}")
    return model.model_copy(
        update={
            "fitted_on": f"{model.fitted_on}: dev answer-relevancy rows of SQuAD (the "
            "cross-encoder's training articles) and WikiEval, each source "
            "weighing the same (bench/fit_relevancy_model.py)"
        }
    )


def write_into(path: Path, xrel: LogisticModel) -> None:
    raw = json.loads(path.read_text())
    raw["models"]["xrel"] = xrel.model_dump()
    path.write_text(json.dumps(raw, indent=2) + "\n")
    print(f"wrote xrel into {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", type=Path, required=True)
    ap.add_argument("--install", action="store_true")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--out", type=Path, help="write v2 plus xrel here instead of the package")
    args = ap.parse_args()
    if args.install:
        install(args.run)
    xrel = calibrate()
    if args.out:
        shutil.copyfile(DEFAULT_PARAMS, args.out)
        write_into(args.out, xrel)
    elif args.write:
        for path in (DEFAULT_PARAMS, MODEL_PARAMS):
            write_into(path, xrel)


if __name__ == "__main__":
    main()
