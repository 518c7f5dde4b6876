"""Fit the offline judges on the development part of the public human labels, and measure them
on the development AND held-out parts (``ragjudge.judges.offline.labelsets`` fixes the split).

    .venv/bin/python bench/fit_offline_judges.py [--write] [--json out.json] [--quick]

Fitting (dev only, ``ragjudge.judges.offline.fit``: shrunk towards the bundled parameters,
sign-constrained, lambda by grouped 5-fold CV): ``support`` on ExpertQA claims (Complete vs
Incomplete/Partial, with the text of their cited evidence) plus WikiEval faithfulness answers
(grounded 1 / ungrounded 0); ``relevancy`` on WikiEval answer-relevance answers (full 1 /
incomplete 0), HaluQuestQA answers (no irrelevance span 1 / span 0) and SQuAD answer sentences
(direct 1 / another question's or a near miss 0); ``short_relevancy`` on the fragment answers
among them (``segment.terse_answer``: mostly SQuAD gold spans 1 / another question's span 0);
``short_support`` on SQuAD short answers of the dev articles (the gold span 1 / a span of
another article, another question's answer on the same paragraph, or a plausible answer of an
unanswerable question 0); ``aspect`` on
HaluQuestQA answers (no incomplete-answer span 1 / span 0); ``chunk`` on WikiEval
context-relevance contexts (focused 1 / padded 0). Each source has the same total weight in a
model (``balanced``). ``--write`` saves the result as the package's ``params/v2.json`` and puts
its models into ``params/v3.json`` (keeping v3's ``xenc``). The
prior is always the hand-set ``params/v0-hand.json``, so a rerun reproduces the shipped file.

Measured on each part, with 95% bootstrap intervals (2,000 resamples of items, seed 0):
WikiEval pairwise accuracy (ties count 1/2) for faithfulness, answer relevance and context
relevance, beside same-run baselines (content-word overlap; question-answer cosine; "the shorter
context wins"); ExpertQA claim-support AUROC and best-threshold accuracy (threshold picked on dev,
applied to held-out) beside content-word overlap, and answer relevancy vs informativeness
(AUROC for "Very relevant", Spearman over the four grades); HaluQuestQA AUROC of completeness
(no-reference) for "no incomplete span" and of answer relevancy for "no irrelevant span";
SQuAD answer relevancy (a direct answer against another question's answer, as sentences and
as bare answer spans), and faithfulness
of short answers (``squad_short_answers``: the gold span against its paragraph beside a span
from another article; the share scored, not ``no_claims``, and AUROC on the scored ones; and
beside a wrong span of the same paragraph, ``squad_wrong_spans``: another question's answer,
or a plausible answer of an unanswerable question); context recall of a short reference, its
gold paragraph beside another paragraph of the article that holds its words
(``squad_recall_pairs``).

Embeddings come from the judges' encoder (``ragjudge.embedding.load_judge_encoder``), encoded in
large batches (a dry pass over a ``TextRecorder`` lists the fit's texts; the judges measured are
``prepare``d on their items first, as runners do), and are cached on disk
(``$RAGJUDGE_HOME/bench/offline_embeddings.<encoder name>.pkl``) so a rerun only encodes new
texts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fit_support_model import with_model  # noqa: E402

from ragjudge.home import state_path  # noqa: E402
from ragjudge.judges.offline import labelsets as L  # noqa: E402
from ragjudge.judges.offline.embed import EmbeddingCache, TextRecorder  # noqa: E402
from ragjudge.judges.offline.features import profile, stems  # noqa: E402
from ragjudge.judges.offline.fit import LabelRow, featurise, refit  # noqa: E402
from ragjudge.judges.offline.params import (  # noqa: E402
    PARAMS_DIR,
    PRIOR_PARAMS,
    LogisticModel,
    Params,
    load_params,
)
from ragjudge.judges.offline.segment import short_answer  # noqa: E402
from ragjudge.judges.offline.support import support_matrix  # noqa: E402
from ragjudge.schema import JudgeInput, JudgeResult  # noqa: E402
from ragjudge.text import split_sentences  # noqa: E402

SEED = 0
RESAMPLES = 2000


def shared_data() -> Path:
    return Path(os.environ.get("RAGJUDGE_SHARED_DATA", ROOT.parent / "shared" / "data"))


class DiskEncoder:
    """The judges' encoder with a pickle of every vector it produced (bench only), one file per
    encoder name (``<stem>.<name>.pkl``)."""

    def __init__(self, stem: Path) -> None:
        from ragjudge.embedding import load_judge_encoder

        self.inner = load_judge_encoder()
        self.name = self.inner.name
        self.path = stem.with_name(f"{stem.name}.{self.name}.pkl")
        self.store: dict[str, np.ndarray] = {}
        if self.path.is_file():
            self.store = pickle.loads(self.path.read_bytes())
        self.new = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.store]
        if missing:
            for t, v in zip(missing, self.inner.encode(missing), strict=True):
                self.store[t] = v
            self.new += len(missing)
        return np.stack([self.store[t] for t in texts])

    def save(self) -> None:
        if self.new:
            self.path.write_bytes(pickle.dumps(self.store))
            self.new = 0


# ----------------------------------------------------------------------------- statistics


def auroc(y: Sequence[int], s: Sequence[float]) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(np.asarray(y), np.asarray(s)))


def boot(
    stat: Callable[[np.ndarray], float], n: int, *, resamples: int = RESAMPLES
) -> tuple[float, float, float]:
    """(value, low, high): ``stat(indices)`` on all items and its percentile bootstrap CI."""
    rng = np.random.default_rng(SEED)
    idx = np.arange(n)
    vals = []
    for _ in range(resamples):
        try:
            vals.append(stat(rng.integers(0, n, n)))
        except ValueError:  # a resample with one class only
            continue
    lo, hi = np.quantile(vals, [0.025, 0.975])
    return stat(idx), float(lo), float(hi)


def fmt(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"


def show(v: Any) -> str:
    return fmt(v) if isinstance(v, tuple) else str(v)


def pairwise(pref: Sequence[float], rej: Sequence[float]) -> tuple[float, float, float]:
    wins = np.array(
        [1.0 if a > b else 0.5 if a == b else 0.0 for a, b in zip(pref, rej, strict=True)]
    )
    return boot(lambda i: float(wins[i].mean()), len(wins))


def auc_ci(y: Sequence[int], s: Sequence[float]) -> tuple[float, float, float]:
    ya, sa = np.asarray(y), np.asarray(s)
    return boot(lambda i: auroc(ya[i], sa[i]), len(ya))


def spearman_ci(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    from scipy.stats import spearmanr

    x, y = np.asarray(a), np.asarray(b)
    return boot(lambda i: float(spearmanr(x[i], y[i]).statistic), len(x))


def best_threshold(y: np.ndarray, s: np.ndarray) -> float:
    grid = np.unique(s)
    accs = [((s >= t) == y).mean() for t in grid]
    return float(grid[int(np.argmax(accs))])


def acc_ci(y: np.ndarray, s: np.ndarray, t: float) -> tuple[float, float, float]:
    hit = ((s >= t) == y).astype(float)
    return boot(lambda i: float(hit[i].mean()), len(hit))


def overlap(claim: str, contexts: Sequence[str]) -> float:
    """The baseline: share of the claim's content-word stems found in the contexts."""
    c = set(stems(claim))
    pool = set(stems(" ".join(contexts)))
    return len(c & pool) / len(c) if c else 0.0


# ----------------------------------------------------------------------------- evaluation


def run(judge: Any, items: list[JudgeInput]) -> list[JudgeResult]:
    """``judge`` on ``items``, prepared first as runners do (their texts encoded in one batch)."""
    judge.prepare(items)

    async def go() -> list[JudgeResult]:
        return [await judge.judge(it) for it in items]

    return asyncio.run(go())


def score(r: JudgeResult, fallback: float = 0.0) -> float:
    return r.score if r.score is not None else fallback


def short_item(question: str, paragraph: str, answer: str) -> JudgeInput:
    """A SQuAD question's item (no context when ``paragraph`` is empty)."""
    contexts = [paragraph] if paragraph else []
    return JudgeInput(id=question, question=question, answer=answer, contexts=contexts)


def recall_item(question: str, reference: str, paragraph: str) -> JudgeInput:
    """A context-recall item: one chunk, a short reference."""
    return JudgeInput(
        id=question, question=question, answer="", reference=reference, contexts=[paragraph]
    )


def pair_item(p: L.Pair, answer: str, contexts: list[str]) -> JudgeInput:
    return JudgeInput(id=p.id, question=p.question, answer=answer, contexts=contexts)


def cosine(cache: EmbeddingCache, a: str, b: str) -> float:
    va, vb = cache.vectors([a, b])
    return float(va @ vb)


def chunk_p(r: JudgeResult) -> float:
    """The first chunk's relevance probability (confidence is of the verdict given)."""
    if not r.evidence.chunks:
        return 0.0
    c = r.evidence.chunks[0]
    conf = c.confidence or 0.0
    return conf if c.relevant else 1.0 - conf


def evaluate(params: Params, cache: EmbeddingCache, root: Path, quick: bool) -> dict[str, Any]:
    from ragjudge.judges.offline import (
        OfflineAnswerRelevancyJudge,
        OfflineCompletenessJudge,
        OfflineContextPrecisionJudge,
        OfflineContextRecallJudge,
        OfflineFaithfulnessJudge,
    )

    faith = OfflineFaithfulnessJudge(params=params, cache=cache)
    rel = OfflineAnswerRelevancyJudge(params=params, cache=cache)
    comp = OfflineCompletenessJudge(params=params, cache=cache)
    prec = OfflineContextPrecisionJudge(params=params, cache=cache)
    rec = OfflineContextRecallJudge(params=params, cache=cache)
    out: dict[str, Any] = {}
    pairs = L.wikieval_pairs(root / "wikieval")
    claims = L.expertqa_claims(root / "expertqa_val")
    answers = haluquestqa_answers(root)
    if quick:
        claims = claims[::4]
        answers = answers[::4]
    for part in ("dev", "held_out"):
        res: dict[str, Any] = {}
        ps = [p for p in pairs if p.part == part]
        # WikiEval faithfulness
        ff = [p for p in ps if p.dimension == "faithfulness"]
        fp = run(faith, [pair_item(p, p.preferred, [p.context or ""]) for p in ff])
        fr = run(faith, [pair_item(p, p.rejected, [p.context or ""]) for p in ff])
        res["wikieval_faithfulness_pairwise"] = pairwise(
            [score(r) for r in fp], [score(r) for r in fr]
        )
        res["baseline_overlap_wikieval_faithfulness"] = pairwise(
            [overlap(p.preferred, [p.context or ""]) for p in ff],
            [overlap(p.rejected, [p.context or ""]) for p in ff],
        )
        # WikiEval answer relevance
        ar = [p for p in ps if p.dimension == "answer_relevance"]
        rp = run(rel, [pair_item(p, p.preferred, []) for p in ar])
        rr = run(rel, [pair_item(p, p.rejected, []) for p in ar])
        res["wikieval_answer_relevance_pairwise"] = pairwise(
            [score(r) for r in rp], [score(r) for r in rr]
        )
        res["baseline_qa_cosine_wikieval_answer_relevance"] = pairwise(
            [cosine(cache, p.question, p.preferred) for p in ar],
            [cosine(cache, p.question, p.rejected) for p in ar],
        )
        # WikiEval context relevance
        cr = [p for p in ps if p.dimension == "context_relevance"]
        cp = run(prec, [pair_item(p, "", [p.preferred]) for p in cr])
        cj = run(prec, [pair_item(p, "", [p.rejected]) for p in cr])
        res["wikieval_context_relevance_pairwise_score"] = pairwise(
            [score(r) for r in cp], [score(r) for r in cj]
        )
        res["wikieval_context_relevance_pairwise_p"] = pairwise(
            [chunk_p(r) for r in cp], [chunk_p(r) for r in cj]
        )
        res["baseline_shorter_wins_wikieval_context_relevance"] = pairwise(
            [-len(p.preferred) for p in cr], [-len(p.rejected) for p in cr]
        )
        # ExpertQA claim support
        sc = [c for c in L.support_claims(claims) if c.part == part]
        sup = np.array(
            [
                float(
                    support_matrix(
                        [c.claim], [profile(e) for e in c.evidence], params, cache
                    ).matrix.max()
                )
                for c in sc
            ]
        )
        y = np.array([c.supported for c in sc])
        base = np.array([overlap(c.claim, c.evidence) for c in sc])
        res["expertqa_support_auroc"] = auc_ci(y, sup)
        res["baseline_overlap_expertqa_support_auroc"] = auc_ci(y, base)
        res["_expertqa_support_scores"] = (y.tolist(), sup.tolist())
        res["expertqa_n"] = len(sc)
        # ExpertQA relevancy vs informativeness (question, claim)
        inf = [c for c in claims if c.part == part and c.informativeness]
        grades = {
            "Very relevant": 3,
            "A bit relevant": 2,
            "Not too important": 1,
            "Uninformative": 0,
        }
        rs = run(
            rel,
            [
                JudgeInput(id=str(i), question=c.question, answer=c.claim, contexts=[])
                for i, c in enumerate(inf)
            ],
        )
        rsc = [score(r) for r in rs]
        res["expertqa_relevancy_auroc_very_relevant"] = auc_ci(
            [int(c.informativeness == "Very relevant") for c in inf], rsc
        )
        res["expertqa_relevancy_spearman_informativeness"] = spearman_ci(
            [grades[c.informativeness or ""] for c in inf], rsc
        )
        # HaluQuestQA
        ans = [a for a in answers if a.part == part]
        hc = run(
            comp,
            [
                JudgeInput(id=str(i), question=a.question, answer=a.answer, contexts=[])
                for i, a in enumerate(ans)
            ],
        )
        hr = run(
            rel,
            [
                JudgeInput(id=str(i), question=a.question, answer=a.answer, contexts=[])
                for i, a in enumerate(ans)
            ],
        )
        res["haluquestqa_completeness_auroc"] = auc_ci(
            [1 - a.incomplete for a in ans], [score(r) for r in hc]
        )
        res["haluquestqa_relevancy_auroc"] = auc_ci(
            [1 - a.irrelevant for a in ans], [score(r) for r in hr]
        )
        res["haluquestqa_n"] = len(ans)
        # SQuAD: a direct answer against another question's answer (pairwise, and its level)
        sq = squad_pairs(root, part)
        sd = run(rel, [JudgeInput(id=r[0], question=r[0], answer=r[1], contexts=[]) for r in sq])
        so = run(rel, [JudgeInput(id=r[0], question=r[0], answer=r[2], contexts=[]) for r in sq])
        res["squad_relevancy_pairwise"] = pairwise([score(r) for r in sd], [score(r) for r in so])
        res["squad_relevancy_direct_mean"] = round(float(np.mean([score(r) for r in sd])), 3)
        res["squad_relevancy_other_mean"] = round(float(np.mean([score(r) for r in so])), 3)
        res["squad_relevancy_direct_share_relevant"] = round(
            float(np.mean([score(r) >= 0.5 for r in sd])), 3
        )
        # ... and as bare answer spans ("Rollo" for "Who was the Norse leader?")
        spans = [(r[0], r[3], r[4]) for r in sq]
        gd = [score(r) for r in run(rel, [short_item(q, "", a) for q, a, _ in spans])]
        go = [score(r) for r in run(rel, [short_item(q, "", b) for q, _, b in spans])]
        res["squad_relevancy_span_pairwise"] = pairwise(gd, go)
        res["squad_relevancy_span_direct_mean"] = round(float(np.mean(gd)), 3)
        res["squad_relevancy_span_other_mean"] = round(float(np.mean(go)), 3)
        res["squad_relevancy_span_direct_share_relevant"] = round(
            float(np.mean([x >= 0.5 for x in gd])), 3
        )
        # SQuAD short answers: faithfulness of the gold span to its paragraph, beside a span of
        # the same kind from another article (one the paragraph does not hold)
        short = squad_short_answers(root, part)
        own = run(faith, [short_item(q, c, a) for q, c, a, _ in short])
        far = run(faith, [short_item(q, c, b) for q, c, _, b in short])
        res["squad_short_faithfulness_scored"] = round(
            float(np.mean([r.score is not None for r in own + far])), 3
        )
        kept = [(y, r.score) for y, rs in ((1, own), (0, far)) for r in rs if r.score is not None]
        res["squad_short_faithfulness_auroc"] = auc_ci([y for y, _ in kept], [x for _, x in kept])
        res["squad_short_n"] = len(short)
        # ... beside a wrong span of the same paragraph: another question's answer, or a
        # plausible answer of an unanswerable question (the chunk holds it, not as the answer)
        gold = [score(r) for r in own]
        res["squad_short_faithfulness_gold_mean"] = round(float(np.mean(gold)), 3)
        res["squad_short_faithfulness_gold_share_supported"] = round(
            float(np.mean([x >= 0.5 for x in gold])), 3
        )
        # context recall of a short reference: its gold paragraph beside another paragraph of
        # the article that holds the reference's words
        recall = squad_recall_pairs(root, part)
        own_r = [score(r) for r in run(rec, [recall_item(q, a, g) for q, a, g, _ in recall])]
        far_r = [score(r) for r in run(rec, [recall_item(q, a, o) for q, a, _, o in recall])]
        res["squad_short_recall_auroc"] = auc_ci([1] * len(own_r) + [0] * len(far_r), own_r + far_r)
        res["squad_short_recall_gold_share"] = round(float(np.mean([x >= 0.5 for x in own_r])), 3)
        res["squad_short_recall_other_share"] = round(float(np.mean([x >= 0.5 for x in far_r])), 3)
        res["squad_short_recall_n"] = len(recall)
        wrong = squad_wrong_spans(root, part)
        for kind in ("other", "plausible"):
            items = [short_item(q, c, a) for q, c, a, k in wrong if k == kind]
            bad = [score(r) for r in run(faith, items)]
            res[f"squad_short_faithfulness_{kind}_auroc"] = auc_ci(
                [1] * len(gold) + [0] * len(bad), gold + bad
            )
            res[f"squad_short_faithfulness_{kind}_mean"] = round(float(np.mean(bad)), 3)
            res[f"squad_short_faithfulness_{kind}_n"] = len(bad)
        out[part] = res
    # ExpertQA best-threshold accuracy: the threshold picked on dev, applied to both parts
    yd, sd = (np.asarray(v) for v in out["dev"].pop("_expertqa_support_scores"))
    yh, sh = (np.asarray(v) for v in out["held_out"].pop("_expertqa_support_scores"))
    t = best_threshold(yd, sd)
    out["dev"]["expertqa_support_accuracy_at_dev_threshold"] = acc_ci(yd, sd, t)
    out["held_out"]["expertqa_support_accuracy_at_dev_threshold"] = acc_ci(yh, sh, t)
    out["held_out"]["expertqa_majority_class_accuracy"] = float(max(yh.mean(), 1 - yh.mean()))
    out["expertqa_dev_threshold"] = t
    return out


def balanced(sources: dict[str, list[L.LabelRow]]) -> list[L.LabelRow]:
    """All rows, weighted so that each source has the same total weight in each dimension
    (531 ExpertQA claims must not drown 56 WikiEval answers in the support model); a row's own
    weight sets its share within its source."""
    totals: Counter[tuple[str, str]] = Counter()
    for name, rows in sources.items():
        for r in rows:
            totals[name, r.dimension] += r.weight
    out: list[L.LabelRow] = []
    for name, rows in sources.items():
        for r in rows:
            r.weight = 100.0 * r.weight / totals[name, r.dimension]
            out.append(r)
    return out


def wikieval_rows(pairs: list[L.Pair]) -> list[LabelRow]:
    """Pointwise rows from pairs: preferred = 1, rejected = 0 (grouped by question)."""
    dim = {
        "faithfulness": "faithfulness",
        "answer_relevance": "answer_relevancy",
        "context_relevance": "context_precision",
    }
    rows: list[LabelRow] = []
    for p in pairs:
        for text, label in ((p.preferred, 1), (p.rejected, 0)):
            if p.dimension == "context_relevance":
                rows.append(
                    LabelRow(
                        "context_precision", p.question, label, contexts=[text], group=p.question
                    )
                )
            else:
                rows.append(
                    LabelRow(
                        dim[p.dimension],
                        p.question,
                        label,
                        answer=text,
                        contexts=[p.context] if p.context else [],
                        group=p.question,
                    )
                )
    return rows


def expertqa_rows(claims: list[L.ExpertQARecord]) -> list[LabelRow]:
    """Support rows: faithfulness with ``claim``, the claim against its cited evidence."""
    rows = [
        LabelRow(
            "faithfulness",
            c.question,
            c.supported,
            answer=c.claim,
            claim=c.claim,
            contexts=list(c.evidence),
            group=f"eqa{c.group}",
        )
        for c in L.support_claims(claims)
    ]
    return rows


@dataclass(frozen=True)
class LongAnswer:
    """One HaluQuestQA answer with whether experts marked an incomplete-answer or an irrelevant
    span in it (1 = marked)."""

    question: str
    answer: str
    incomplete: int
    irrelevant: int
    part: str
    group: str


def haluquestqa_answers(root: Path) -> list[LongAnswer]:
    """Both answers of every HaluQuestQA question, in file order."""
    return [
        LongAnswer(
            question=r.question,
            answer=answer,
            incomplete=int(side in r.incomplete),
            irrelevant=int(side in r.irrelevant),
            part=r.part,
            group=str(r.index),
        )
        for r in L.haluquestqa_rows(root / "haluquestqa")
        for side, answer in zip(("answer1", "answer2"), r.answers, strict=True)
    ]


def haluquestqa_rows(answers: list[LongAnswer]) -> list[LabelRow]:
    """Completeness rows without reference (label 1 = no incomplete-answer span) and answer
    relevancy rows (label 1 = no irrelevance span)."""
    return [
        LabelRow(dimension, a.question, label, answer=a.answer, group=f"hq{a.group}")
        for a in answers
        for dimension, label in (
            ("completeness", 1 - a.incomplete),
            ("answer_relevancy", 1 - a.irrelevant),
        )
    ]


SQUAD_HELD_OUT = ("Sky_(United_Kingdom)", "Victoria_(Australia)")
"""SQuAD articles kept for measuring answer relevancy (the other three are fitted on)."""


@lru_cache(maxsize=1)
def squad_subset(root: Path) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The SQuAD subset's paragraph texts by id and its questions, answerable and not, in file
    order (read once per process)."""
    folder = root / "squad_v2_dev_subset"
    docs = {d["doc_id"]: d["text"] for d in map(json.loads, (folder / "corpus.jsonl").open())}
    return docs, list(map(json.loads, (folder / "questions.jsonl").open()))


def squad_answerable(root: Path) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The paragraph texts by id and the answerable questions, in file order."""
    docs, questions = squad_subset(root)
    return docs, [q for q in questions if not q["is_impossible"]]


def squad_article(question: dict[str, Any]) -> str:
    """The title of the article a SQuAD question's gold paragraph belongs to."""
    return str(question["gold_doc_id"]).rsplit("_", 1)[0]


def squad_part(
    root: Path, part: str, *, answerable: bool = True
) -> list[tuple[str, dict[str, Any]]]:
    """(article, question) per answerable SQuAD question of ``part`` (``SQUAD_HELD_OUT``'s
    articles are the held-out part), in file order; every question with ``answerable=False``."""
    _, questions = squad_answerable(root) if answerable else squad_subset(root)
    return [
        (article, q)
        for q in questions
        if ((article := squad_article(q)) in SQUAD_HELD_OUT) == (part == "held_out")
    ]


def squad_pairs(root: Path, part: str) -> list[tuple[str, ...]]:
    """(question, direct answer, other answer, gold span, other span, near miss) per answerable
    SQuAD question of ``part``: the direct answer is the sentence of its gold paragraph holding
    its first gold answer (the span); the other answer is such a sentence of the question half
    the article's list away (a fluent, on-topic text that answers another question); the near
    miss is another sentence of the gold paragraph without the answer (on the question's topic,
    not answering it). Questions without all three are skipped."""
    docs, _ = squad_answerable(root)
    by_article: dict[str, list[tuple[str, str, str, str]]] = {}
    for article, q in squad_part(root, part):
        gold = q["answers"][0]
        sentences = split_sentences(docs[q["gold_doc_id"]])
        sentence = next((s for s in sentences if gold in s), None)
        near = next((s for s in sentences if not any(a in s for a in q["answers"])), None)
        if sentence and near:
            by_article.setdefault(article, []).append((q["question"], sentence, gold, near))
    out = []
    for rows in by_article.values():
        half = len(rows) // 2
        for (question, sentence, gold, near), (_, other, other_gold, _) in zip(
            rows, rows[half:] + rows[:half], strict=True
        ):
            if gold not in other and other != sentence and gold != other_gold:
                out.append((question, sentence, other, gold, other_gold, near))
    return out


def squad_short_answers(root: Path, part: str) -> list[tuple[str, str, str, str]]:
    """(question, gold paragraph, gold span, far span) per answerable SQuAD question of
    ``part`` whose shortest gold answer has at most four words; the far span is the shortest
    answer of a question of another article, both or neither holding a digit, that the
    paragraph does not contain (seeded choice)."""
    docs, qs = squad_answerable(root)
    rng = np.random.default_rng(0)

    def digits(text: str) -> bool:
        return any(ch.isdigit() for ch in text)

    out = []
    for article, q in squad_part(root, part):
        span, paragraph = min(q["answers"], key=len), docs[q["gold_doc_id"]]
        if len(span.split()) > 4:
            continue
        pool = [
            b
            for o in qs
            if squad_article(o) != article
            and digits(b := min(o["answers"], key=len)) == digits(span)
            and b not in paragraph
        ]
        out.append((q["question"], paragraph, span, str(pool[int(rng.integers(len(pool)))])))
    return out


def squad_wrong_spans(root: Path, part: str) -> list[tuple[str, str, str, str]]:
    """(question, gold paragraph, wrong span, kind) per SQuAD question of ``part``: for an
    unanswerable question, its shortest plausible answer (a span of the paragraph that looks
    like the answer; kind ``plausible``); for an answerable one with a short answer, the first
    short gold answer of another question on the same paragraph that neither holds nor is held
    by its own answers (kind ``other``). Spans of at most four words, as short answers are."""
    docs, _ = squad_subset(root)
    questions = [q for _, q in squad_part(root, part, answerable=False)]
    spans: dict[str, list[str]] = {}
    for q in questions:
        if not q["is_impossible"]:
            spans.setdefault(q["gold_doc_id"], []).append(min(q["answers"], key=len))
    out = []
    for q in questions:
        paragraph = docs[q["gold_doc_id"]]
        if q["is_impossible"]:
            short = [a for a in q["plausible_answers"] if len(a.split()) <= 4]
            if short:
                out.append((q["question"], paragraph, min(short, key=len), "plausible"))
        elif len(min(q["answers"], key=len).split()) <= 4:
            other = next(
                (
                    s
                    for s in spans[q["gold_doc_id"]]
                    if len(s.split()) <= 4 and not any(s in a or a in s for a in q["answers"])
                ),
                None,
            )
            if other:
                out.append((q["question"], paragraph, other, "other"))
    return out


def squad_recall_pairs(root: Path, part: str) -> list[tuple[str, str, str, str]]:
    """(question, short gold answer, gold paragraph, other paragraph) per answerable SQuAD
    question of ``part`` whose shortest gold answer has at most four words and appears in
    another paragraph of the same article (the first such, in corpus order): a chunk that holds
    the reference's words, not written to answer the question."""
    docs, _ = squad_answerable(root)
    out = []
    for article, q in squad_part(root, part):
        span = min(q["answers"], key=len)
        if len(span.split()) > 4:
            continue
        other = next(
            (
                text
                for doc, text in docs.items()
                if doc != q["gold_doc_id"] and doc.rsplit("_", 1)[0] == article and span in text
            ),
            None,
        )
        if other:
            out.append((q["question"], span, docs[q["gold_doc_id"]], other))
    return out


def squad_short_support_rows(root: Path) -> list[LabelRow]:
    """Faithfulness rows of short answers on the dev articles (``short_support``): the gold
    span against its paragraph 1; a span of another article, a plausible answer of an
    unanswerable question and another question's answer on the same paragraph 0. Each class
    weighs the same (the negatives are made here)."""
    short = squad_short_answers(root, "dev")
    rows = [(q, c, a, 1) for q, c, a, _ in short] + [(q, c, b, 0) for q, c, _, b in short]
    rows += [(q, c, a, 0) for q, c, a, _ in squad_wrong_spans(root, "dev")]
    rows = [r for r in rows if short_answer(r[2]) is not None]
    positives = sum(r[3] for r in rows)
    return [
        LabelRow(
            "faithfulness",
            q,
            label,
            answer=a,
            contexts=[c],
            group=f"squad:{c[:40]}",
            weight=1.0 if label else positives / (len(rows) - positives),
        )
        for q, c, a, label in rows
    ]


def squad_rows(root: Path) -> list[LabelRow]:
    """Answer relevancy rows: the direct answer 1, the other question's answer 0 (as sentences
    and as the bare gold spans: a one-phrase answer is as direct as a sentence), and the near
    miss 0. The negatives are made here, so their number is a choice, not a rate: each class
    weighs the same (a sentence negative 1/2, since there are two per direct sentence)."""
    return [
        LabelRow("answer_relevancy", q, label, answer=a, group=f"squad:{q}", weight=weight)
        for q, direct, other, span, other_span, near in squad_pairs(root, "dev")
        for a, label, weight in (
            (direct, 1, 1.0),
            (other, 0, 0.5),
            (near, 0, 0.5),
            (span, 1, 1.0),
            (other_span, 0, 1.0),
        )
    ]


def fit(cache: EmbeddingCache, root: Path, quick: bool) -> Params:
    pairs = [p for p in L.wikieval_pairs(root / "wikieval") if p.part == "dev"]
    claims = [c for c in L.expertqa_claims(root / "expertqa_val") if c.part == "dev"]
    answers = [a for a in haluquestqa_answers(root) if a.part == "dev"]
    if quick:
        claims, answers = claims[::4], answers[::4]
    sources = {
        "expertqa": expertqa_rows(claims),
        "wikieval": wikieval_rows(pairs),
        "haluquestqa": haluquestqa_rows(answers),
        "squad": squad_rows(root),
        "squad_short": squad_short_support_rows(root),
    }
    rows = balanced(sources)
    recorder = TextRecorder()  # a dry pass lists the texts the features embed: one batch
    featurise(rows, load_params(PRIOR_PARAMS), EmbeddingCache(recorder))
    cache.warm(recorder.texts)
    return refit(
        rows,
        version="v2",
        base=load_params(PRIOR_PARAMS),
        description="fitted by bench/fit_offline_judges.py on the dev parts of WikiEval, "
        "ExpertQA (validation claims), HaluQuestQA and SQuAD (answer relevancy)",
        provenance={
            "script": "bench/fit_offline_judges.py",
            "split": f"sha256(set:question) mod 100 < {L.HELD_OUT_PERCENT} is held out",
            "rows": len(rows),
        },
        cache=cache,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="save the fit as params/v2.json")
    ap.add_argument("--params", type=Path, help="with --eval-only: measure these parameters")
    ap.add_argument("--json", type=Path, help="write the figures as JSON here")
    ap.add_argument("--quick", action="store_true", help="a quarter of ExpertQA / HaluQuestQA")
    ap.add_argument("--eval-only", action="store_true", help="measure the bundled params")
    ap.add_argument("--fit-only", action="store_true", help="fit (and --write), do not measure")
    args = ap.parse_args()
    root = shared_data()
    if not root.is_dir():
        sys.exit(f"shared data not found at {root}")
    enc = DiskEncoder(state_path("bench", "offline_embeddings"))
    cache = EmbeddingCache(enc, max_items=10_000_000)
    t0 = time.perf_counter()
    try:
        params = load_params(args.params) if args.eval_only else fit(cache, root, args.quick)
        t_fit = time.perf_counter() - t0
        if not args.eval_only:
            for name, m in params.models.items():
                print(f"fit {name:10s} {m.cv}")
            if args.write:
                params.save(PARAMS_DIR / "v2.json")
                for path in sorted(PARAMS_DIR.glob("v[3-9]*.json")):  # model calibrations
                    raw = json.loads(path.read_text())  # raw: v2's part may be outdated
                    xenc = LogisticModel.model_validate(raw["models"]["xenc"])
                    card = raw.get("support_card", "support.json")
                    prov = raw["provenance"]["xenc"]
                    with_model(params, xenc, prov, raw["version"], card).save(path)
                    print(f"wrote {PARAMS_DIR / 'v2.json'} and v2's models in {path}")
            if args.fit_only:
                return
        figures = evaluate(params, cache, root, args.quick)
    finally:
        enc.save()
    figures["params_version"] = params.version
    figures["seconds"] = {"fit": round(t_fit, 1), "total": round(time.perf_counter() - t0, 1)}
    print(f"\n{'figure':58s} {'dev':>24s} {'held-out':>24s}")
    for key in figures["dev"]:
        d, h = figures["dev"][key], figures["held_out"].get(key)
        print(f"{key:58s} {show(d):>24s} {show(h) if h is not None else '':>24s}")
    majority = figures["held_out"]["expertqa_majority_class_accuracy"]
    print(f"expertqa held-out majority-class accuracy {majority:.3f}; ", end="")
    print(f"threshold picked on dev {figures['expertqa_dev_threshold']:.3f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
