"""Measure the offline answer-relevancy judge on held-out data only, for several parameter files
in one run (before / after a change), with 95% bootstrap intervals.

    .venv/bin/python bench/bench_relevancy.py [--params A.json --params B.json] [--json out.json]

Default: the bundled ``params/v2.json`` and ``params/v3.json``. Sentence vectors are cached on
disk as bench/fit_offline_judges.py caches them. Figures per parameter file:

- WikiEval answer relevance, held-out pairs: pairwise accuracy (full over incomplete answer).
- HaluQuestQA held-out answers: AUROC of the score for "no irrelevance span".
- SQuAD held-out articles (``squad_pairs``, ``SQUAD_HELD_OUT``): pairwise accuracy of the
  direct answer sentence against another question's answer sentence, against a near miss (a
  sentence of the gold paragraph without the answer), against the other answer padded with the
  near miss (the on-topic two-sentence text), and against an abstention in wordings not used in
  training (``HELD_OUT_ABSTENTIONS``); the mean score of each.
- The demo's 40 answer-relevancy labels (``datasets/demo/labels.csv``; a check, never fitted
  on): Spearman of score against label, and the scores of its answers labelled 5, lowest first.
- Two probes on the demo's question "When was the Greyhaven Rock Lighthouse first lit?": a
  direct answer and an on-topic two-sentence text that does not answer it.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from fit_offline_judges import (  # noqa: E402
    DiskEncoder,
    auc_ci,
    haluquestqa_answers,
    pairwise,
    run,
    score,
    shared_data,
    spearman_ci,
    squad_pairs,
)

from ragjudge.home import state_path  # noqa: E402
from ragjudge.judges.offline import OfflineAnswerRelevancyJudge  # noqa: E402
from ragjudge.judges.offline import labelsets as L  # noqa: E402
from ragjudge.judges.offline.embed import EmbeddingCache  # noqa: E402
from ragjudge.judges.offline.params import DEFAULT_PARAMS, MODEL_PARAMS, load_params  # noqa: E402
from ragjudge.schema import JudgeInput  # noqa: E402

HELD_OUT_ABSTENTIONS = (
    "I am unable to determine that from the sources I was given.",
    "That information is not available in the retrieved passages.",
    "The answer to this question cannot be found in the context.",
    "I have no information about that.",
)
GREYHAVEN = "When was the Greyhaven Rock Lighthouse first lit?"
PROBES = {
    "direct": "The Greyhaven Rock Lighthouse was first lit on 1 February 1811.",
    "on_topic_non_answer": "The Greyhaven Rock Lighthouse stands on a reef far out to sea. "
    "Its granite tower was built by the Board's engineer with stones dovetailed together.",
}


def _items(question_answers: list[tuple[str, str]]) -> list[JudgeInput]:
    return [
        JudgeInput(id=str(i), question=q, answer=a, contexts=[])
        for i, (q, a) in enumerate(question_answers)
    ]


def measure(judge: Any, root: Path) -> dict[str, Any]:
    def scores(qa: list[tuple[str, str]]) -> list[float]:
        items = _items(qa)
        judge.prepare(items)  # encode every text in one batch, as runners do
        return [score(r) for r in run(judge, items)]

    out: dict[str, Any] = {}
    ar = [
        p
        for p in L.wikieval_pairs(root / "wikieval")
        if p.part == "held_out" and p.dimension == "answer_relevance"
    ]
    out["wikieval_answer_relevance_pairwise"] = pairwise(
        scores([(p.question, p.preferred) for p in ar]),
        scores([(p.question, p.rejected) for p in ar]),
    )
    hq = [a for a in haluquestqa_answers(root) if a.part == "held_out"]
    out["haluquestqa_relevancy_auroc"] = auc_ci(
        [1 - a.irrelevant for a in hq], scores([(a.question, a.answer) for a in hq])
    )
    sq = squad_pairs(root, "held_out")
    direct = scores([(r[0], r[1]) for r in sq])
    out["squad_direct_mean"] = round(float(np.mean(direct)), 3)
    rivals = {
        "other": [(r[0], r[2]) for r in sq],
        "near_miss": [(r[0], r[5]) for r in sq],
        "padded_other": [(r[0], f"{r[2]} {r[5]}") for r in sq],
        "abstention": [
            (r[0], HELD_OUT_ABSTENTIONS[i % len(HELD_OUT_ABSTENTIONS)]) for i, r in enumerate(sq)
        ],
    }
    for name, qa in rivals.items():
        s = scores(qa)
        out[f"squad_direct_vs_{name}_pairwise"] = pairwise(direct, s)
        out[f"squad_{name}_mean"] = round(float(np.mean(s)), 3)
    out["squad_n"] = len(sq)
    with (ROOT / "datasets" / "demo" / "labels.csv").open(newline="", encoding="utf-8") as fh:
        demo = [r for r in csv.DictReader(fh) if r["dimension"] == "answer_relevancy"]
    ds = scores([(r["question"], r["answer"]) for r in demo])
    out["demo_spearman"] = spearman_ci([float(r["label"]) for r in demo], ds)
    out["demo_label5_scores"] = sorted(
        round(s, 3) for r, s in zip(demo, ds, strict=True) if r["label"] == "5"
    )
    out["demo_n"] = len(demo)
    ps = scores([(GREYHAVEN, a) for a in PROBES.values()])
    out["probes"] = {k: round(s, 3) for k, s in zip(PROBES, ps, strict=True)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", type=Path, action="append")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    root = shared_data()
    if not root.is_dir():
        sys.exit(f"shared data not found at {root}")
    figures: dict[str, Any] = {}
    enc = DiskEncoder(state_path("bench", "offline_embeddings"))
    cache = EmbeddingCache(enc, max_items=10_000_000)
    for path in args.params or [DEFAULT_PARAMS, MODEL_PARAMS]:
        t0 = time.perf_counter()
        judge = OfflineAnswerRelevancyJudge(params=load_params(path), cache=cache)
        try:
            res = measure(judge, root)
        finally:
            enc.save()
        res["version"] = judge.version
        res["seconds"] = round(time.perf_counter() - t0, 1)
        figures[str(path)] = res
        print(f"== {path} ({judge.version}, {res['seconds']} s)")
        for key, value in res.items():
            print(f"  {key:45s} {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
