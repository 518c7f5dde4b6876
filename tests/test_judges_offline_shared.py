"""The offline judges on the public human labels (held-out parts only; skipped without data).

Subsampled to stay fast: the first 12 held-out WikiEval faithfulness pairs and the first 150
held-out ExpertQA claims. The full evaluation is bench/fit_offline_judges.py (docs/judges.md).
"""

from __future__ import annotations

from pathlib import Path

from sklearn.metrics import roc_auc_score

from ragjudge.judges.offline import OfflineFaithfulnessJudge
from ragjudge.judges.offline import labelsets as L
from ragjudge.judges.offline.embed import shared_cache
from ragjudge.judges.offline.features import profile, stems
from ragjudge.judges.offline.params import load_params
from ragjudge.judges.offline.support import support_matrix
from ragjudge.schema import JudgeInput


def _overlap(claim: str, contexts: tuple[str, ...] | list[str]) -> float:
    words = set(stems(claim))
    pool = set(stems(" ".join(contexts)))
    return len(words & pool) / len(words) if words else 0.0


async def test_held_out_wikieval_faithfulness_pairwise(shared_data: Path) -> None:
    pairs = [
        p
        for p in L.wikieval_pairs(shared_data / "wikieval")
        if p.dimension == "faithfulness" and p.part == "held_out"
    ][:12]
    assert len(pairs) == 12
    judge = OfflineFaithfulnessJudge()
    wins = 0.0
    for p in pairs:
        good, bad = [
            await judge.judge(
                JudgeInput(id=p.id, question=p.question, answer=a, contexts=[p.context or ""])
            )
            for a in (p.preferred, p.rejected)
        ]
        g, b = good.score or 0.0, bad.score or 0.0
        wins += 1.0 if g > b else 0.5 if g == b else 0.0
    assert wins / len(pairs) >= 0.9


def test_held_out_expertqa_support_beats_overlap(shared_data: Path) -> None:
    claims = L.support_claims(L.expertqa_claims(shared_data / "expertqa_val"))
    claims = [c for c in claims if c.part == "held_out"]
    claims = claims[:150]
    labels = [c.supported for c in claims]
    assert 0 < sum(labels) < len(labels)
    params = load_params()
    cache = shared_cache()
    ours = [
        float(
            support_matrix([c.claim], [profile(e) for e in c.evidence], params, cache).matrix.max()
        )
        for c in claims
    ]
    baseline = [_overlap(c.claim, c.evidence) for c in claims]
    assert roc_auc_score(labels, ours) > roc_auc_score(labels, baseline)
