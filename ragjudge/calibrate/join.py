"""Join human labels to judge results by item id (label ``dimension`` = judge name).

Contract: every label must find its judge result, and a label that records the answer text it
was given for must match the run's answer. A label whose item id matches no judged
item, or whose dimension matches no judge, or whose item has no result from that judge, is a
``DataError`` naming the label file and line (and how many more rows fail the same way). A
judge result that is not ``ok`` stays in the join with ``judge_score=None``: agreement is
computed over scored items and the unscored ones are counted as coverage, never dropped
silently.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from ragjudge.errors import DataError
from ragjudge.schema import JudgeResult

from .labels import HumanLabel, LabelSet, Scale, consensus


class LabelledItem(BaseModel):
    """One (item, dimension) with its human labels and the judge's score of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str
    dimension: str
    scale: Scale
    human: float
    """Consensus of the annotators' labels, native units (see ``labels.consensus``)."""
    human_values: list[float]
    annotators: list[str | None]
    judge_score: float | None
    """For a pairwise item: score(a) - score(b), in [-1, 1]."""
    judge_status: str
    lines: list[int] = Field(default_factory=list)


class Joined(BaseModel):
    """Labelled items per dimension, plus every judge score of the run (for estimation)."""

    model_config = ConfigDict(extra="forbid")

    items: dict[str, list[LabelledItem]]
    scales: dict[str, Scale]
    all_scores: dict[str, dict[str, float | None]]
    """judge -> item id -> score (None when not ok), over every judged item."""


def index_results(
    results: Iterable[JudgeResult], *, source: str | None = None
) -> dict[str, dict[str, JudgeResult]]:
    """judge -> item id -> result; two results for the same judge and item are an error."""
    out: dict[str, dict[str, JudgeResult]] = defaultdict(dict)
    for r in results:
        if r.item_id in out[r.judge]:
            raise DataError(
                f"two results of judge {r.judge!r} for item {r.item_id!r}; keep one backend "
                "per judge name",
                path=source,
            )
        out[r.judge][r.item_id] = r
    return dict(out)


def _fail(path: str, problems: list[tuple[int, str]]) -> DataError:
    line, message = problems[0]
    more = f" (and {len(problems) - 1} more such rows)" if len(problems) > 1 else ""
    return DataError(message + more, path=path, line=line)


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


class _Lookup:
    """Finds the judge result a label names, collecting a problem (line, message) for each
    label that finds none."""

    def __init__(self, index: dict[str, dict[str, JudgeResult]]) -> None:
        self.index = index
        self.all_ids = {item for by_item in index.values() for item in by_item}
        self.example = sorted(self.all_ids)[:2]
        self.problems: list[tuple[int, str]] = []

    def __call__(self, lab: HumanLabel, item: str) -> JudgeResult | None:
        by_item = self.index.get(lab.dimension)
        if by_item is None:
            judges = ", ".join(sorted(self.index)) or "none"
            self.problems.append(
                (lab.line, f"dimension {lab.dimension!r} matches no judge (judges: {judges})")
            )
            return None
        found = by_item.get(item)
        if found is None and item not in self.all_ids:
            ids = ", ".join(repr(e) for e in self.example) or "nothing"
            self.problems.append(
                (lab.line, f"item id {item!r} matches no judged item (ids look like {ids})")
            )
        elif found is None:
            self.problems.append(
                (lab.line, f"item {item!r} has no result from judge {lab.dimension!r}")
            )
        return found

    def score(self, labs: Sequence[HumanLabel], scale: Scale) -> tuple[float | None, str] | None:
        """(judge score, status) of the item ``labs`` label; None when a result is missing. A
        pairwise item scores score(a) - score(b), ``ok`` only when both are scored."""
        first = labs[0]
        pair = first.pair if scale == "pairwise" else None
        if pair is None:
            found = self(first, first.item_id)
            return None if found is None else (found.score, found.status.value)
        ra, rb = self(first, pair[0]), self(first, pair[1])
        if ra is None or rb is None:
            return None
        if ra.score is None or rb.score is None:
            return None, (ra.status.value if ra.score is None else rb.status.value)
        return ra.score - rb.score, "ok"


def _other_answer(lab: HumanLabel, answers: dict[str, str]) -> tuple[int, str] | None:
    """The problem of a label given for another answer text than the run's, if it is one."""
    run_answer = answers.get(lab.item_id)
    if lab.answer is None or run_answer is None or _same_text(lab.answer, run_answer):
        return None
    return (
        lab.line,
        f"the label of {lab.item_id!r} was given for another answer than the run's "
        "(the answer text differs): relabel this item for this run",
    )


def join_labels(
    labels: LabelSet,
    results: Sequence[JudgeResult] | dict[str, dict[str, JudgeResult]],
    answers: dict[str, str] | None = None,
) -> Joined:
    """Match every label to its judge result (see the module docstring for the contract).

    ``answers`` (item id -> the run's answer text) enables the check that a label carrying the
    answer it was given for (an ``answer`` column) labels the answer the run holds.
    """
    index = results if isinstance(results, dict) else index_results(results)
    lookup = _Lookup(index)
    grouped: dict[tuple[str, str], list[HumanLabel]] = defaultdict(list)
    for lab in labels.labels:
        problem = _other_answer(lab, answers or {})
        if problem is not None:
            lookup.problems.append(problem)
        grouped[(lab.dimension, lab.item_id)].append(lab)

    items: dict[str, list[LabelledItem]] = defaultdict(list)
    for (dim, item_id), labs in grouped.items():
        scale = labels.scales[dim]
        scored = lookup.score(labs, scale)
        if scored is None:
            continue
        values = [lab.value for lab in labs]
        items[dim].append(
            LabelledItem(
                item_id=item_id,
                dimension=dim,
                scale=scale,
                human=consensus(values, scale),
                human_values=values,
                annotators=[lab.annotator for lab in labs],
                judge_score=scored[0],
                judge_status=scored[1],
                lines=[lab.line for lab in labs],
            )
        )
    if lookup.problems:
        raise _fail(labels.path, sorted(lookup.problems))
    all_scores = {
        judge: {item: r.score for item, r in by_item.items()} for judge, by_item in index.items()
    }
    return Joined(
        items={d: sorted(v, key=lambda it: it.item_id) for d, v in items.items()},
        scales={d: labels.scales[d] for d in items},
        all_scores=all_scores,
    )


def status_counts(items: Sequence[LabelledItem]) -> dict[str, int]:
    return dict(Counter(it.judge_status for it in items))
