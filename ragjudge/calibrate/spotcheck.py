"""Which items to label next, written as a CSV sheet ready to fill in.

Selection over the items of a run that some judge scored (minus ``exclude``, e.g. the items
already labelled):
1. Disagreement: about a quarter of the budget goes to the items whose judge scores spread the
   most (max - min over the item's judges; only when items have two or more judges).
2. Stratified: the rest is spread evenly over ``n_strata`` equal-width bins of the item's mean
   judge score between the lowest and highest mean, drawn at random (seeded) inside each bin;
   a bin with too few items passes its share to the others. Low, middle and high scores are
   all represented, so a calibration curve can be fitted over the whole range.
Both rules take one item per question (the case of an item id ``case@kN``) while questions are
left: the items of one question at several k share their question, and often their answer and
their judges' verdict, so labelling two of them buys less than labelling two questions. A
question is picked twice only once every question has an item picked.

The sheet has one row per selected item and dimension, columns
``item_id, dimension, label, annotator, selected_because, question, answer, contexts,
reference``; ``label`` (and ``annotator``) are blank to fill in. Judge scores are left out on
purpose: showing them would anchor the annotator. ``judge_sheet`` judges a filled sheet's items
again from what the sheet shows (``agree --rejudge``), without the run.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragjudge.errors import DataError
from ragjudge.io.rows import label_rows, split_contexts
from ragjudge.schema import Answer, JudgeInput

from .source import RunData

SHEET_COLUMNS = (
    "item_id",
    "dimension",
    "label",
    "annotator",
    "selected_because",
    "question",
    "answer",
    "contexts",
    "reference",
)
DISAGREEMENT_SHARE = 0.25


class Pick(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str
    reason: str
    """``disagreement`` or ``stratum i/B``."""
    mean_score: float
    spread: float


def select_items(
    run: RunData,
    n: int,
    *,
    dimensions: Sequence[str] | None = None,
    exclude: set[str] | None = None,
    n_strata: int = 5,
    seed: int = 0,
) -> list[Pick]:
    """Up to ``n`` items by the rules of the module docstring (fewer if the run is smaller)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for r in run.results:
        if r.score is None or (dimensions and r.judge not in dimensions):
            continue
        if exclude and r.item_id in exclude:
            continue
        scores[r.item_id].append(r.score)
    ids = sorted(scores)
    if n <= 0 or not ids:
        return []
    mean = {i: float(np.mean(scores[i])) for i in ids}
    spread = {i: float(max(scores[i]) - min(scores[i])) for i in ids}
    picks: list[Pick] = []
    asked: set[str] = set()  # questions with an item picked

    def pick(i: str, reason: str) -> None:
        picks.append(Pick(item_id=i, reason=reason, mean_score=mean[i], spread=spread[i]))
        asked.add(question_of(i))

    if any(len(scores[i]) > 1 for i in ids):
        n_dis = min(len(ids), max(1, round(n * DISAGREEMENT_SHARE)))
        by_spread = sorted(ids, key=lambda i: (-spread[i], i))
        for i in _fresh_first(by_spread, asked)[:n_dis]:
            pick(i, "disagreement")
    taken = {p.item_id for p in picks}
    rest = [i for i in ids if i not in taken]
    budget = min(n - len(picks), len(rest))
    if budget > 0:
        lo, hi = min(mean[i] for i in rest), max(mean[i] for i in rest)
        width = (hi - lo) / n_strata or 1.0
        bins: dict[int, list[str]] = defaultdict(list)
        for i in rest:
            bins[min(int((mean[i] - lo) / width), n_strata - 1)].append(i)
        rng = np.random.default_rng(seed)
        for members in bins.values():
            rng.shuffle(members)
        # Round-robin over the bins: each takes one in turn until the budget is spent; while
        # some bin holds an item of a question not yet asked, only such items are taken.
        order = sorted(bins)
        while budget > 0:
            fresh_left = any(question_of(i) not in asked for b in order for i in bins[b])
            for b in order:
                if budget == 0:
                    break
                took = next(
                    (i for i in bins[b] if not fresh_left or question_of(i) not in asked), None
                )
                if took is not None:
                    bins[b].remove(took)
                    pick(took, f"stratum {b + 1}/{n_strata}")
                    budget -= 1
    return picks


def question_of(item_id: str) -> str:
    """The question (case id) of an item id ``case@kN``; another id is its own question."""
    case_id, sep, k = item_id.rpartition("@k")
    return case_id if sep and k.isdigit() else item_id


def _fresh_first(items: Sequence[str], asked: set[str]) -> list[str]:
    """``items`` in their order, those of a question not in ``asked`` (its first item only)
    first, then the rest: the order that asks each question once before any twice."""
    fresh: list[str] = []
    seen = set(asked)
    for i in items:
        if question_of(i) not in seen:
            seen.add(question_of(i))
            fresh.append(i)
    chosen = set(fresh)
    return fresh + [i for i in items if i not in chosen]


def write_sheet(
    run: RunData,
    picks: Sequence[Pick],
    path: str | Path,
    *,
    dimensions: Sequence[str] | None = None,
) -> int:
    """Write the labelling sheet; returns the number of rows written."""
    judges: dict[str, list[str]] = defaultdict(list)
    for r in run.results:
        if not dimensions or r.judge in dimensions:
            judges[r.item_id].append(r.judge)
    rows = 0
    with Path(path).open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(SHEET_COLUMNS))
        writer.writeheader()
        for pick in picks:
            answer = run.answers.get(pick.item_id)
            case = answer.case_id if answer else pick.item_id.rpartition("@k")[0]
            contexts = (
                "\n\n".join(f"[{j + 1}] {c}" for j, c in enumerate(answer.contexts))
                if answer
                else ""
            )
            for judge in sorted(set(judges[pick.item_id])):
                writer.writerow(
                    {
                        "item_id": pick.item_id,
                        "dimension": judge,
                        "label": "",
                        "annotator": "",
                        "selected_because": pick.reason.split(" ")[0],
                        "question": run.questions.get(case, ""),
                        "answer": answer.text if answer else "",
                        "contexts": contexts,
                        "reference": run.references.get(case, ""),
                    }
                )
                rows += 1
    return rows


def read_sheet_inputs(path: str | Path) -> dict[str, JudgeInput]:
    """item id -> the ``JudgeInput`` a filled sheet shows (question, answer, contexts, reference),
    so the labelled items can be judged again without the run."""
    out: dict[str, JudgeInput] = {}
    for _, row in label_rows(Path(path)):
        item = str(row.get("item_id") or "").strip()
        if not item or item in out:
            continue
        contexts = row.get("contexts") or ""
        out[item] = JudgeInput(
            id=item,
            question=str(row.get("question") or ""),
            answer=str(row.get("answer") or ""),
            contexts=split_contexts(contexts) if isinstance(contexts, str) else contexts,
            reference=(str(row["reference"]) if row.get("reference") else None),
        )
    return out


async def judge_sheet(path: str | Path, dimensions: Sequence[str], backend: str) -> RunData:
    """Judge the items of a filled spot-check sheet again, from the question, answer, contexts
    and reference it shows, with the ``backend`` judges named by ``dimensions``."""
    from ragjudge.judges.registry import create_judge
    from ragjudge.judges.runner import run_judges
    from ragjudge.store import parse_item_id

    inputs = read_sheet_inputs(path)
    items = list(inputs.values())
    if not items or not any(it.answer for it in items):
        raise DataError("the sheet has no 'answer' column to judge again", path=path)
    judges = [create_judge(d, backend) for d in dimensions]
    by_judge = await run_judges(judges, items, progress=False)
    data = RunData(
        source=f"{Path(path).name} judged again ({backend})",
        results=[r for rs in by_judge.values() for r in rs],
    )
    for item in items:
        try:
            case_id, k = parse_item_id(item.id)
        except ValueError:
            continue
        data.answers[item.id] = Answer(
            case_id=case_id,
            k=k,
            text=item.answer,
            context_ids=[],
            contexts=item.contexts,
            generator="unknown",
        )
        data.questions[case_id] = item.question
        if item.reference:
            data.references[case_id] = item.reference
    return data
