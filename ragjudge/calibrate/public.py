"""Public human-label sets as judge inputs plus label rows (for the agreement analysis of
``bench/agreement_real_labels.py`` and ``notebooks/agreement.ipynb``).

Each loader reads a folder of ``../shared/data`` (see its README.txt) and returns a
``PublicSet``: the ``JudgeInput`` of every item with the judge that scores it, and label rows
in the format of ``ragjudge.calibrate.labels`` (written with ``write_labels``).

- WikiEval (``wikieval/wikieval_pairs.jsonl``): 50 pairs per dimension, the preference from
  how the set was built. faithfulness: the grounded vs the ungrounded answer, judged against
  the context; answer_relevance -> ``answer_relevancy``: the full vs the incomplete answer;
  context_relevance -> ``context_precision``: the focused vs the padded context, each split
  into sentences (the chunks ranked in reading order; the answer is not used). Which of the two
  items is ``a`` is drawn at random (seeded), so the label is ``a`` or ``b``.
- ExpertQA validation (``expertqa_val/claims_val.jsonl``): each claim with its cited evidence
  -> ``faithfulness`` (answer = the claim, contexts = the evidence passages as given, each
  headed by its ``[n] URL``). Expert support
  ``Complete`` = 1; ``Partial`` and ``Incomplete`` = 0; ``Missing`` (no evidence cited), ``N/A``
  and unlabelled claims are left out, and so are the claims whose citations are URLs without
  page text (the experts read the page; the set lacks it: ``labelsets.evidence_passages``).
- HaluQuestQA (``haluquestqa/HaluQuestQA.csv``, tab-separated): both answers of each question
  (no retrieval context). ``answer_relevancy`` label 1 when the expert marked no irrelevance
  span in that answer; ``completeness`` (no reference) 1 when no incompleteness span. With
  ``preferences=True`` the set is instead the expert's preference between the two answers, as
  pairwise labels for both judges.

``part`` keeps, of the (sub)sampled items, those in one part of the offline judges' fixed split
by question (``dev``, which fitted parameters are fitted on, or ``held_out``).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ragjudge.judges.offline.labelsets import (
    evidence_passages,
    expertqa_records,
    haluquestqa_rows,
    wikieval_pairs,
)
from ragjudge.schema import JudgeInput, JudgeResult
from ragjudge.text import split_sentences

from .labels import PAIR_SEPARATOR

T = TypeVar("T")
Part = Literal["all", "dev", "held_out"]


def _in_part(item_part: str, part: Part) -> bool:
    """The offline judges' fixed split (``ragjudge.judges.offline.labelsets.part_of``): fitted
    parameters are fitted on ``dev``; ``held_out`` is what they can be measured on."""
    return part == "all" or item_part == part


class LabelRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str
    dimension: str
    label: str
    scale: str


class PublicSet(BaseModel):
    """Judge inputs by judge name, and their human labels."""

    model_config = ConfigDict(extra="forbid")

    name: str
    inputs: dict[str, list[JudgeInput]] = Field(default_factory=dict)
    labels: list[LabelRow] = Field(default_factory=list)

    def add(self, judge: str, item: JudgeInput) -> None:
        self.inputs.setdefault(judge, []).append(item)


def _subsample(rows: Sequence[T], limit: int | None, seed: int) -> list[T]:
    rows = list(rows)
    if limit is None or limit >= len(rows):
        return rows
    return random.Random(seed).sample(rows, limit)


_WIKIEVAL_JUDGE = {
    "faithfulness": "faithfulness",
    "answer_relevance": "answer_relevancy",
    "context_relevance": "context_precision",
}


def wikieval(
    folder: str | Path, *, limit: int | None = None, seed: int = 0, part: Part = "all"
) -> PublicSet:
    """WikiEval pairs; ``limit`` pairs per dimension (see the module docstring)."""
    pairs = wikieval_pairs(Path(folder))
    out = PublicSet(name="wikieval")
    rng = random.Random(seed)
    for dim, judge in _WIKIEVAL_JUDGE.items():
        for pair in _subsample([p for p in pairs if p.dimension == dim], limit, seed):
            rid, question = pair.id, pair.question
            if not _in_part(pair.part, part):
                continue
            sides = {"pref": pair.preferred, "rej": pair.rejected}
            for side, text in sides.items():
                if dim == "context_relevance":
                    chunks = split_sentences(text) or [text]
                    item = JudgeInput(
                        id=f"{rid}/{side}", question=question, answer="", contexts=chunks
                    )
                else:
                    contexts = [str(pair.context)] if dim == "faithfulness" else []
                    item = JudgeInput(
                        id=f"{rid}/{side}", question=question, answer=text, contexts=contexts
                    )
                out.add(judge, item)
            first_pref = rng.random() < 0.5
            a, b = ("pref", "rej") if first_pref else ("rej", "pref")
            out.labels.append(
                LabelRow(
                    item_id=f"{rid}/{a}{PAIR_SEPARATOR}{rid}/{b}",
                    dimension=judge,
                    label="a" if first_pref else "b",
                    scale="pairwise",
                )
            )
    return out


def expertqa_support(
    folder: str | Path, *, limit: int | None = None, seed: int = 0, part: Part = "all"
) -> PublicSet:
    """ExpertQA claims with evidence and a Complete/Partial/Incomplete support label."""
    records = expertqa_records(Path(folder))
    keep = [r for r in records if r.support in ("Complete", "Partial", "Incomplete")]
    keep = [r for r in keep if evidence_passages(r.evidence)]
    out = PublicSet(name="expertqa_support")
    for r in _subsample(keep, limit, seed):
        if not _in_part(r.part, part):
            continue
        item_id = f"q{r.q_index}-{r.system}-c{r.claim_index}"
        out.add(
            "faithfulness",
            JudgeInput(id=item_id, question=r.question, answer=r.claim, contexts=list(r.evidence)),
        )
        out.labels.append(
            LabelRow(
                item_id=item_id,
                dimension="faithfulness",
                label="1" if r.support == "Complete" else "0",
                scale="binary",
            )
        )
    return out


def haluquestqa(
    folder: str | Path,
    *,
    limit: int | None = None,
    seed: int = 0,
    preferences: bool = False,
    part: Part = "all",
) -> PublicSet:
    """HaluQuestQA answers with expert relevance/completeness labels, or preferences."""
    rows = haluquestqa_rows(Path(folder))
    out = PublicSet(name="haluquestqa_preferences" if preferences else "haluquestqa")
    for r in _subsample(rows, limit, seed):
        if not _in_part(r.part, part):
            continue
        qid = f"hq{r.index}"
        ids = {}
        for n, (side, answer) in enumerate(
            zip(("answer1", "answer2"), r.answers, strict=True), start=1
        ):
            item_id = f"{qid}/a{n}"
            ids[side] = item_id
            item = JudgeInput(id=item_id, question=r.question, answer=answer, contexts=[])
            out.add("answer_relevancy", item)
            out.add("completeness", item)
            if not preferences:
                for judge, marked in (
                    ("answer_relevancy", r.irrelevant),
                    ("completeness", r.incomplete),
                ):
                    out.labels.append(
                        LabelRow(
                            item_id=item_id,
                            dimension=judge,
                            label="0" if side in marked else "1",
                            scale="binary",
                        )
                    )
        if preferences and r.preference in ("Answer 1", "Answer 2"):
            label = "a" if r.preference == "Answer 1" else "b"
            for judge in ("answer_relevancy", "completeness"):
                out.labels.append(
                    LabelRow(
                        item_id=f"{ids['answer1']}{PAIR_SEPARATOR}{ids['answer2']}",
                        dimension=judge,
                        label=label,
                        scale="pairwise",
                    )
                )
    return out


def write_labels(labels: Sequence[LabelRow], path: str | Path) -> Path:
    """The label rows as a label CSV (``item_id, dimension, label, scale``)."""
    p = Path(path)
    with p.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["item_id", "dimension", "label", "scale"])
        for row in labels:
            writer.writerow([row.item_id, row.dimension, row.label, row.scale])
    return p


async def score_set(
    data: PublicSet, *, backend: str = "offline", concurrency: int = 8
) -> list[JudgeResult]:
    """Score every input of ``data`` with its judge (``create_judge(name, backend)``); the
    agreement notebook and ``bench/agreement_real_labels.py`` read these results."""
    from ragjudge.judges.registry import create_judge
    from ragjudge.judges.runner import run_judges

    results: list[JudgeResult] = []
    for judge_name, items in data.inputs.items():
        judge = create_judge(judge_name, backend)
        by_judge = await run_judges([judge], items, concurrency=concurrency, progress=False)
        results.extend(by_judge[judge.name])
    return results
