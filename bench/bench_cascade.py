"""The judge cascade's cost / agreement curve as its band widens, on the shared labelled
claim-support sets, with the scripted LLM judge of the local test server (real HTTP).

    .venv/bin/python bench/bench_cascade.py --items 40 --json cascade.json

Items: for each set of ``support_data.LODO_SETS``, a seeded sample of ``--items`` test-split
items (``support_eval.sample_test``), each the claim as the answer and its best
``--contexts`` evidence windows as contexts (empty question: claim support only). Every item is
judged by the offline ``faithfulness`` judge and by the LLM one (``gpt-4o-mini`` pricing on
the server's reported tokens); the all-LLM run is the reference. For a band [0.5 - w, 0.5 + w]
on the offline score, the cascade keeps the offline verdict outside it and the LLM's inside
(exactly what ``CascadeJudge`` does: the bench checks this by running the real cascade at the
default band and comparing). Reported per width: share escalated, cost against the all-LLM
run, agreement of the verdicts (score >= 0.5) with the all-LLM run, and balanced accuracy
against the human labels for the cascade, offline alone and the LLM alone, with 95%
bootstrap intervals (1,000 resamples of items). Also the band ``fit_band`` picks for a
target agreement of 0.9, fitted on half the items (one of each pair of a seeded split) and
measured on the other half.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support_data import LODO_SETS, eval_items
from support_eval import sample_test

from ragjudge.judges.offline.windows import ranked
from ragjudge.schema import JudgeInput

WIDTHS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)


def items_of(
    root: Path, per_set: int, contexts: int, seed: int
) -> tuple[list[JudgeInput], list[int], list[str]]:
    inputs, labels, sets = [], [], []
    for name in LODO_SETS:
        for n, it in enumerate(sample_test(eval_items(root, name), per_set, seed)):
            order = ranked(it.claim, it.passages)[:contexts]
            inputs.append(
                JudgeInput(
                    id=f"{name}:{n}",
                    question="",
                    answer=it.claim,
                    contexts=[it.passages[i] for i in order],
                )
            )
            labels.append(int(it.label))
            sets.append(name)
    return inputs, labels, sets


def boot(values: np.ndarray, n: int = 1000, seed: int = 0) -> list[float]:
    """mean and 95% percentile interval of ``values`` over resamples of items."""
    rng = np.random.default_rng(seed)
    means = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(n)]
    return [
        float(values.mean()),
        float(np.percentile(means, 2.5)),
        float(np.percentile(means, 97.5)),
    ]


def bacc(y: np.ndarray, pred: np.ndarray, n: int = 1000, seed: int = 0) -> list[float]:
    def stat(idx: np.ndarray) -> float:
        yy, pp = y[idx], pred[idx]
        return float(((pp[yy == 1] == 1).mean() + (pp[yy == 0] == 0).mean()) / 2)

    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(n):
        idx = rng.integers(0, len(y), len(y))
        if 0 < y[idx].sum() < len(idx):
            vals.append(stat(idx))
    return [
        stat(np.arange(len(y))),
        float(np.percentile(vals, 2.5)),
        float(np.percentile(vals, 97.5)),
    ]


async def judge_all(judge, items, concurrency: int = 8):
    from ragjudge.judges.runner import run_judges

    return (await run_judges([judge], items, concurrency=concurrency, progress=False))[judge.name]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--items", type=int, default=40, help="test items per set")
    ap.add_argument("--contexts", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()

    from ragjudge.judges.cascade import CascadeBand, fit_band
    from ragjudge.judges.registry import create_judge
    from ragjudge.llm import LLMClient
    from ragjudge.testing.server import FakeLLMServer

    items, labels, sets = items_of(args.data, args.items, args.contexts, args.seed)
    y = np.array(labels)
    with FakeLLMServer() as server:
        os.environ.update(
            OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-bench", RAGJUDGE_MODEL="gpt-4o-mini"
        )
        os.environ["RAGJUDGE_HOME"] = tempfile.mkdtemp(prefix="bench-cascade-")  # a cold LLM cache
        offline = create_judge("faithfulness", "offline")
        off = asyncio.run(judge_all(offline, items))
        llm = asyncio.run(
            judge_all(create_judge("faithfulness", "llm", client=LLMClient.from_env()), items)
        )
        real = asyncio.run(
            judge_all(create_judge("faithfulness", "cascade", client=LLMClient.from_env()), items)
        )
    s_off = np.array([r.score if r.score is not None else np.nan for r in off])
    v_llm = np.array([(r.score or 0.0) >= 0.5 for r in llm], dtype=int)
    llm_ok = np.array([r.score is not None for r in llm])
    cost = np.array([r.usage.cost_usd for r in llm])
    tokens = np.array([r.usage.prompt_tokens + r.usage.completion_tokens for r in llm])
    v_off = np.where(np.isnan(s_off), 0, s_off >= 0.5).astype(int)

    default = CascadeBand()
    expect = np.array([default.escalates(r) for r in off])
    got = np.array([r.evidence.features.get("cascade_escalated", 0.0) == 1.0 for r in real])
    assert (expect == got).all(), "the real cascade escalated other items than the simulation"

    rows = []
    for w in WIDTHS:
        band = CascadeBand(low=0.5 - w, high=0.5 + w)
        esc = np.array([band.escalates(r) for r in off])
        v = np.where(esc, v_llm, v_off)
        rows.append(
            {
                "width": w,
                "band": [0.5 - w, 0.5 + w],
                "escalated": float(esc.mean()),
                "cost_share": float(cost[esc].sum() / cost.sum())
                if cost.sum()
                else float(tokens[esc].sum() / tokens.sum()),
                "agreement_with_llm": boot((v == v_llm).astype(float)),
                "bacc_human": bacc(y, v),
            }
        )
    # a band fitted on half the items, measured on the other half
    rng = np.random.default_rng(args.seed)
    half = rng.permutation(len(items)) < len(items) // 2
    ok = ~np.isnan(s_off)
    fitted = fit_band(s_off[half & ok], v_llm[half & ok], target=0.9)
    test = ~half
    esc = np.array([fitted.escalates(r) for r in off])[test]
    v = np.where(esc, v_llm[test], v_off[test])
    fit_row = {
        "band": [fitted.low, fitted.high],
        "platt": list(fitted.platt),
        "escalated": float(esc.mean()),
        "cost_share": float(cost[test][esc].sum() / cost[test].sum()) if cost[test].sum() else None,
        "agreement_with_llm": boot((v == v_llm[test]).astype(float)),
        "n": int(test.sum()),
    }
    out = {
        "items": len(items),
        "per_set": {s: sets.count(s) for s in LODO_SETS},
        "llm_unscored": int((~llm_ok).sum()),
        "offline_unscored": int(np.isnan(s_off).sum()),
        "all_llm": {
            "cost_usd": float(cost.sum()),
            "tokens": int(tokens.sum()),
            "bacc_human": bacc(y, v_llm),
        },
        "offline_alone": {
            "bacc_human": bacc(y, v_off),
            "agreement_with_llm": boot((v_off == v_llm).astype(float)),
        },
        "curve": rows,
        "fitted_half": fit_row,
        "real_cascade_default_band_matches": True,
    }
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    print(table(out))


def cell(v: list[float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def table(out: dict) -> str:
    lines = [
        "| band | escalated | cost vs all-LLM | agreement with all-LLM "
        "| balanced accuracy vs people |",
        "|---|---:|---:|---|---|",
    ]
    for r in out["curve"]:
        lo, hi = r["band"]
        lines.append(
            f"| [{lo:.2f}, {hi:.2f}] | {r['escalated']:.1%} | {r['cost_share']:.1%} | "
            f"{cell(r['agreement_with_llm'])} | {cell(r['bacc_human'])} |"
        )
    lines.append(
        f"| all LLM | 100% | 100% (${out['all_llm']['cost_usd']:.4f}) | 1 "
        f"| {cell(out['all_llm']['bacc_human'])} |"
    )
    f = out["fitted_half"]
    lines.append(
        f"\nfit_band(target 0.9) on half the items: band [{f['band'][0]:.3f}, {f['band'][1]:.3f}], "
        f"platt {f['platt'][0]:.3f}, {f['platt'][1]:.3f}; on the other half ({f['n']} items): "
        f"escalated {f['escalated']:.1%}, agreement with all-LLM {cell(f['agreement_with_llm'])}"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
