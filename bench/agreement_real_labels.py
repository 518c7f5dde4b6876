"""Agreement of the offline judges with public human labels, every statistic with its 95% CI.

Sets (../shared/data, or $RAGJUDGE_SHARED_DATA; see ragjudge/calibrate/public.py for the exact
protocol of each): WikiEval pairs (pairwise accuracy: faithfulness, answer relevance, context
relevance), ExpertQA validation claims (support -> faithfulness), HaluQuestQA answers
(relevance, completeness; and the expert preference between the two answers).

For every set the same analysis as ``ragjudge agree`` runs (labels CSV -> load_labels -> join ->
agreement, Platt/isotonic calibration with cross-validation and the thresholds where P(yes) =
0.5). The peer, measured in the same run on the same items, is a lexical baseline with the same
judge names (content-word overlap; answer length for completeness), so each headline figure is
also given as a ratio to the baseline's. PPI on real labels: random splits label n items and
treat the rest as unlabelled; the interval's coverage of the full-set human mean is counted.

Command (the figures in docs/judges.md):
    .venv/bin/python bench/agreement_real_labels.py --json agreement_real_labels.json
Judged results are cached under $RAGJUDGE_HOME/bench_agreement/ (keyed by set, size, seed and
judge version), so a rerun only re-analyses.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ragjudge.calibrate.analyze import AgreementReport, analyze
from ragjudge.calibrate.labels import load_labels
from ragjudge.calibrate.ppi import estimate_mean
from ragjudge.calibrate.public import (
    PublicSet,
    expertqa_support,
    haluquestqa,
    score_set,
    wikieval,
    write_labels,
)
from ragjudge.calibrate.source import RunData
from ragjudge.home import state_path
from ragjudge.schema import JudgeResult, JudgeStatus
from ragjudge.text import content_words

HEADLINE = {"pairwise": "pairwise_accuracy", "binary": "auc"}


def shared_data() -> Path:
    env = os.environ.get("RAGJUDGE_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data"


# ----------------------------------------------------------------------------- the peer


def _overlap(part: str, whole: str) -> float:
    words = set(content_words(part))
    if not words:
        return 0.0
    return len(words & set(content_words(whole))) / len(words)


def baseline_results(data: PublicSet) -> list[JudgeResult]:
    """Lexical peer: faithfulness = share of answer content words found in the contexts;
    answer_relevancy = share of question content words in the answer; completeness =
    log-length of the answer (saturating at 300 words); context_precision = mean share of
    question content words per chunk."""
    out = []
    for judge, items in data.inputs.items():
        for it in items:
            if judge == "faithfulness":
                score = _overlap(it.answer, " ".join(it.contexts))
            elif judge == "answer_relevancy":
                score = _overlap(it.question, it.answer)
            elif judge == "completeness":
                score = min(1.0, math.log1p(len(it.answer.split())) / math.log1p(300))
            else:
                score = float(np.mean([_overlap(it.question, c) for c in it.contexts] or [0.0]))
            out.append(
                JudgeResult(
                    judge=judge,
                    judge_version="lexical-baseline",
                    backend="custom",
                    item_id=it.id,
                    score=score,
                    status=JudgeStatus.ok,
                )
            )
    return out


# ----------------------------------------------------------------------------- scoring


def _cache_file(data: PublicSet, limit: int | None, seed: int) -> Path:
    from ragjudge.judges.registry import create_judge

    versions = "-".join(sorted({create_judge(j, "offline").version for j in data.inputs}))
    digest = hashlib.sha256(data.model_dump_json(include={"inputs"}).encode()).hexdigest()[:10]
    return state_path("bench_agreement", f"{data.name}-{limit}-{seed}-{versions}-{digest}.jsonl")


def offline_results(
    data: PublicSet, limit: int | None, seed: int
) -> tuple[list[JudgeResult], float]:
    path = _cache_file(data, limit, seed)
    if path.is_file():
        lines = path.read_text(encoding="utf-8").splitlines()
        return [JudgeResult.model_validate_json(x) for x in lines if x.strip()], 0.0
    t0 = time.perf_counter()
    results = asyncio.run(score_set(data))
    seconds = time.perf_counter() - t0
    path.write_text("".join(r.model_dump_json() + "\n" for r in results), encoding="utf-8")
    return results, seconds


def run_analysis(
    data: PublicSet, results: list[JudgeResult], resamples: int, seed: int
) -> AgreementReport:
    with tempfile.TemporaryDirectory() as tmp:
        labels = load_labels(write_labels(data.labels, Path(tmp) / f"{data.name}.csv"))
        return analyze(
            labels, RunData(source=data.name, results=results), n_resamples=resamples, seed=seed
        )


# ----------------------------------------------------------------------------- PPI on real labels


def ppi_splits(
    report: AgreementReport, dimension: str, n_labelled: int, splits: int, seed: int
) -> dict[str, float] | None:
    dim = next((d for d in report.dimensions if d.agreement.dimension == dimension), None)
    if dim is None or dim.agreement.scale == "pairwise" or len(dim.points) < 2 * n_labelled:
        return None
    y = np.array([p.human for p in dim.points])
    f = np.array([p.score for p in dim.points])
    truth = float(y.mean())
    rng = np.random.default_rng(seed)
    cover: dict[str, list[bool]] = {}
    width: dict[str, list[float]] = {}
    for _ in range(splits):
        idx = rng.permutation(y.size)
        lab, unl = idx[:n_labelled], idx[n_labelled:]
        for e in estimate_mean(y[lab], f[lab], f[unl]):
            cover.setdefault(e.method, []).append(e.ci_low <= truth <= e.ci_high)
            width.setdefault(e.method, []).append(e.width)
    out = {"human_mean_all": truth, "n_labelled": float(n_labelled), "N": float(y.size)}
    for method in cover:
        out[f"{method}_coverage"] = float(np.mean(cover[method]))
        out[f"{method}_mean_width"] = float(np.mean(width[method]))
    return out


# ----------------------------------------------------------------------------- printing


def _stat(report: AgreementReport, dim: str, name: str) -> tuple[float | None, str]:
    for d in report.dimensions:
        if d.agreement.dimension == dim:
            try:
                e = d.agreement.get(name)
            except KeyError:
                return None, "n/a"
            return e.value, e.fmt()
    return None, "n/a"


def print_set(name: str, ours: AgreementReport, peer: AgreementReport, seconds: float) -> dict:
    print(f"\n## {name}  (judged in {seconds:.0f} s; 0 = cached)")
    summary: dict[str, object] = {}
    for d in ours.dimensions:
        a = d.agreement
        dim = a.dimension
        head = HEADLINE.get(a.scale, "spearman")
        v_ours, s_ours = _stat(ours, dim, head)
        v_peer, s_peer = _stat(peer, dim, head)
        ratio = f"{v_ours / v_peer:.2f}x" if v_ours and v_peer else "n/a"
        print(
            f"{dim} ({a.scale}, {a.n_scored}/{a.n_labelled} scored, status {a.status_counts}): "
            f"{head} offline {s_ours} | lexical peer {s_peer} | ratio {ratio}"
        )
        for e in a.estimates:
            print(f"    {e.name:<22} {e.fmt():<28} {e.note or ''}")
        cal = []
        for c in d.calibration:
            t = "n/a" if c.threshold is None else f"{c.threshold:.3f}"
            print(
                f"    calibration {c.method:<8} Brier {c.brier_before.fmt()} -> "
                f"{c.brier_after.fmt()}; ECE {c.ece_before.fmt()} -> {c.ece_after.fmt()}; "
                f"score at P(yes)=0.5: {t}"
            )
            cal.append(c.model_dump(exclude={"cv_probabilities"}))
        if d.calibration_note:
            print(f"    calibration: {d.calibration_note}")
        summary[dim] = {
            "scale": a.scale,
            "n": a.n_scored,
            "estimates": [e.model_dump() for e in a.estimates],
            "confusion": a.confusion,
            "peer": {head: v_peer},
            "calibration": cal,
        }
    return summary


def shipped_thresholds() -> dict[str, object]:
    """What the offline judges ship with: params version, and per model its decision threshold
    on the model probability and what it was fitted on."""
    from ragjudge.judges.offline.params import load_params

    params = load_params()
    models = {
        name: {"threshold": m.threshold, "fitted_on": m.fitted_on, "cv": m.cv}
        for name, m in params.models.items()
    }
    print(f"Shipped offline params {params.version}:")
    for name, m in models.items():
        print(f"    {name:<10} decision p >= {m['threshold']}; fitted on: {m['fitted_on']}")
    return {"version": params.version, "models": models}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--wikieval", type=int, default=None, help="pairs per dimension (all 50)")
    ap.add_argument("--expertqa", type=int, default=150, help="claims (of 741)")
    ap.add_argument("--haluquestqa", type=int, default=100, help="questions (of 698)")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ppi-n", type=int, default=50, help="labelled items per PPI split")
    ap.add_argument("--ppi-splits", type=int, default=500)
    ap.add_argument(
        "--part",
        choices=["all", "held_out", "dev"],
        default="all",
        help="keep the sampled items of this part of the offline judges' fixed split "
        "(use held_out once their parameters are fitted: they are fitted on dev)",
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    root = shared_data()
    if not root.is_dir():
        print(f"shared data folder {root} is absent; nothing to measure")
        return 0
    loaders: list[tuple[Callable[..., PublicSet], Path, int | None, dict[str, bool]]] = [
        (wikieval, root / "wikieval", args.wikieval, {}),
        (expertqa_support, root / "expertqa_val", args.expertqa, {}),
        (haluquestqa, root / "haluquestqa", args.haluquestqa, {}),
        (haluquestqa, root / "haluquestqa", args.haluquestqa, {"preferences": True}),
    ]
    print(
        "Offline judges vs public human labels (95% item-bootstrap CIs, "
        f"{args.resamples} resamples); peer = lexical baseline, same items, same run."
    )
    print("Figures taken on a shared, loaded 2-core machine; only the ratios are comparable.")
    out: dict[str, object] = {
        "command": " ".join(["bench/agreement_real_labels.py", *sys.argv[1:]])
    }
    out["shipped"] = shipped_thresholds()
    cache: dict[str, list[JudgeResult]] = {}
    for loader, folder, limit, extra in loaders:
        # Score (and cache) every sampled item; analyse the items of the chosen part.
        everything = loader(folder, limit=limit, seed=args.seed, **extra)
        data = loader(folder, limit=limit, seed=args.seed, part=args.part, **extra)
        key = everything.name.replace("_preferences", "")
        if key in cache:
            scored, seconds = cache[key], 0.0
        else:
            scored, seconds = offline_results(everything, limit, args.seed)
            cache[key] = scored
        keep = {it.id for items in data.inputs.values() for it in items}
        results = [r for r in scored if r.item_id in keep]
        ours = run_analysis(data, results, args.resamples, args.seed)
        peer = run_analysis(data, baseline_results(data), args.resamples, args.seed)
        summary = print_set(f"{data.name} ({args.part})", ours, peer, seconds)
        versions = sorted({r.judge_version for r in results})
        ppi = {}
        for d in ours.dimensions:
            split = ppi_splits(ours, d.agreement.dimension, args.ppi_n, args.ppi_splits, args.seed)
            if split is not None:
                ppi[d.agreement.dimension] = split
                print(
                    f"    PPI {d.agreement.dimension}: n={args.ppi_n} of N={int(split['N'])}, "
                    f"{args.ppi_splits} random splits; coverage of the full-set human mean "
                    f"{split['human_mean_all']:.3f}: "
                    + ", ".join(
                        f"{m} {split[m + '_coverage']:.3f} (width {split[m + '_mean_width']:.3f})"
                        for m in ("human_only", "judge_only", "ppi", "ppi++")
                    )
                )
        out[data.name] = {"judge_versions": versions, "dimensions": summary, "ppi": ppi}
    if args.json:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
