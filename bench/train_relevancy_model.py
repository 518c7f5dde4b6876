"""Train the offline answer-relevancy model: the bundled MiniLM's lowest layers fine-tuned as a
cross-encoder (question, answer) -> P(the answer answers the question), exported to ONNX.

    nice -n 10 .venv/bin/python bench/train_relevancy_model.py --out /tmp/relevancy_run
    .venv/bin/python bench/train_relevancy_model.py --out /tmp/relevancy_run --export

The model is not shipped (docs/judges.md, "Answer relevancy: a cross-encoder, measured and not
shipped"); the runtime that read it (the ``xrel`` calibration) and its fitting script were
removed from the package after commit a142071, where they can still be run.

Data (``relevancy_pairs``): SQuAD 2.0 subset, the three dev articles only (``SQUAD_HELD_OUT``'s
two articles are never read here). Per answerable question: answers 1 = the sentence of its
gold paragraph holding the gold answer, the answer span alone, that sentence followed by and
preceded by a near miss (a second sentence does not make an answer off-topic); answers 0 =
another question's answer sentence from the same article and its span (on-topic, answers
something else), a near miss (a sentence of the gold paragraph without the answer: on the
question's topic, not answering it), the near miss padded with the other answer sentence either
way round (the on-topic two-sentence text that fooled the feature model), an answer sentence
of another article (off-topic), and an abstention (varied wordings, some naming the question's
subject). For an unanswerable question, the sentence holding its plausible answer is a 0 only
when it is not also an answerable question's answer sentence. WikiEval and HaluQuestQA are not
trained on (WikiEval's dev part calibrates; their held-out parts measure). The training loop, model
and export are bench/train_support_model.py's (``run_training``, ``export``), here with the
lowest ``--layers`` layers only.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit_offline_judges import shared_data, squad_part, squad_subset
from train_support_model import export, run_training

from ragjudge.text import split_sentences

ABSTENTIONS = (
    "I don't know.",
    "The context does not say.",
    "I could not find that in the provided documents.",
    "The provided text does not mention {subject}.",
    "Sorry, I cannot answer that from the information given.",
    "There is not enough information to answer the question about {subject}.",
    "The documents say nothing about {subject}.",
    "I'm not sure; the sources do not cover {subject}.",
    "Unfortunately the passage does not answer this.",
    "No answer can be given based on the context about {subject}.",
)


def _subject(question: str) -> str:
    """A few of the question's last words, for abstentions that name what was asked about."""
    words = question.rstrip("?").split()
    return " ".join(words[-4:]) if len(words) > 4 else "this"


def relevancy_pairs(root: Path, rng: random.Random) -> tuple[list[tuple], dict]:
    """``[(question, answer, label, article, kind)]`` of the dev articles (module docstring)
    and the count per kind."""
    docs, _ = squad_subset(root)
    rows = []
    for article, q in squad_part(root, "dev"):
        gold = q["answers"][0]
        sentences = split_sentences(docs[q["gold_doc_id"]])
        sentence = next((s for s in sentences if gold in s), None)
        near = [s for s in sentences if not any(a in s for a in q["answers"])]
        if sentence and near:
            rows.append((article, q["question"], sentence, gold, rng.choice(near)))
    answer_sentences = {r[2] for r in rows}
    by_article: dict[str, list[tuple]] = {}
    for r in rows:
        by_article.setdefault(r[0], []).append(r)
    pairs: list[tuple] = []
    for article, question, sentence, gold, near in rows:
        same = [o for o in by_article[article] if o[3] not in sentence and gold not in o[2]]
        far = [o for a, rs in by_article.items() if a != article for o in rs]
        other = rng.choice(same)
        pairs += [
            (question, sentence, 1, article, "direct"),
            (question, gold, 1, article, "span"),
            (question, f"{sentence} {near}", 1, article, "direct+near"),
            (question, f"{near} {sentence}", 1, article, "near+direct"),
            (question, other[2], 0, article, "other"),
            (question, other[3], 0, article, "other_span"),
            (question, near, 0, article, "near"),
            (question, f"{near} {other[2]}", 0, article, "near+other"),
            (question, f"{other[2]} {near}", 0, article, "other+near"),
            (question, rng.choice(far)[2], 0, article, "far"),
            (
                question,
                rng.choice(ABSTENTIONS).format(subject=_subject(question)),
                0,
                article,
                "abstain",
            ),
        ]
    for article, q in squad_part(root, "dev", answerable=False):
        if not q["is_impossible"] or not q["plausible_answers"]:
            continue
        plausible = q["plausible_answers"][0]
        sentence = next(
            (s for s in split_sentences(docs[q["gold_doc_id"]]) if plausible in s), None
        )
        if sentence and sentence not in answer_sentences:
            pairs.append((q["question"], sentence, 0, article, "plausible"))
    rng.shuffle(pairs)
    return pairs, dict(Counter(p[4] for p in pairs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--layers", type=int, default=3, help="keep only the lowest N layers")
    ap.add_argument("--freeze", type=int, default=0)
    ap.add_argument("--lr", type=float, default=8e-5)
    ap.add_argument("--max-len", type=int, default=96)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save-every", type=int, default=100)
    ap.add_argument("--max-minutes", type=float, default=30.0)
    ap.add_argument("--stop-at", type=int, default=0)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--export", action="store_true")
    args = ap.parse_args()
    if args.export:
        export(args, "relevancy")
        return
    import torch

    Path(args.out).mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    t0 = time.time()
    pairs, kinds = relevancy_pairs(shared_data(), rng)
    meta = {
        "data": "SQuAD 2.0 subset, dev articles (Sky (United Kingdom) and Victoria (Australia) "
        "held out); bench/train_relevancy_model.py relevancy_pairs",
        "kinds": kinds,
    }
    run_training(pairs, meta, args, rng, t0)


if __name__ == "__main__":
    main()
