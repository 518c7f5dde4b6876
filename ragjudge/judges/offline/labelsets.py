"""The one reader of each public human-label file the offline judges are fitted and measured
on, and the agreement analysis (``ragjudge.calibrate.public``) reads.

The data is not shipped (it lives in ``../shared/data``); each reader takes the set's folder
and returns its records, with a FIXED split into development and held-out parts: an item's part
is ``held_out`` when ``sha256(f"{set}:{group}")`` mod 100 < ``HELD_OUT_PERCENT``, where
``group`` is the question (so no question is in both parts). A missing file, a line that is
not JSON or a record without a field it needs is a ``DataError`` naming the file and line.

- ``wikieval_pairs`` (``wikieval/wikieval_pairs.jsonl``): 150 pairwise items (faithfulness,
  answer_relevance, context_relevance).
- ``expertqa_records`` (``expertqa_val/claims_val.jsonl``): each claim as the set gives it;
  ``expertqa_claims`` reads them as the judges do: citation markers removed, with the text of
  their cited evidence (a citation whose page text the set lacks is dropped); support label
  Complete = 1, Incomplete / Partial = 0 (Missing / N/A and claims left without evidence text
  are left out of ``support_claims``).
- ``haluquestqa_rows`` (``haluquestqa/HaluQuestQA.csv``, tab-separated): each question with its
  two answers, which of them experts marked with an incomplete-answer or an irrelevant span,
  and the preferred one.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ragjudge.errors import DataError
from ragjudge.io.rows import existing_file, iter_jsonl
from ragjudge.judges.offline.segment import strip_citations

HELD_OUT_PERCENT = 30
Part = Literal["dev", "held_out"]


def part_of(dataset: str, group: str) -> Part:
    """The fixed split (see the module docstring)."""
    h = int(hashlib.sha256(f"{dataset}:{group}".encode()).hexdigest(), 16) % 100
    return "held_out" if h < HELD_OUT_PERCENT else "dev"


@dataclass(frozen=True)
class Pair:
    """A WikiEval pairwise item: the preferred text should score higher than the rejected."""

    id: str
    dimension: str
    question: str
    context: str | None
    preferred: str
    rejected: str
    part: Part


def _records(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    yield from iter_jsonl(existing_file(path))


def _field(record: Mapping[str, Any], key: str, path: Path, line: int) -> Any:
    if record.get(key) is None:
        raise DataError(f"record has no {key!r}", path=path, line=line)
    return record[key]


def wikieval_pairs(folder: Path) -> list[Pair]:
    """The pairs of ``folder/wikieval_pairs.jsonl``."""
    path = folder / "wikieval_pairs.jsonl"
    out: list[Pair] = []
    for line, r in _records(path):
        question = str(_field(r, "question", path, line))
        out.append(
            Pair(
                id=str(_field(r, "id", path, line)),
                dimension=str(_field(r, "dimension", path, line)),
                question=question,
                context=None if r.get("context") is None else str(r["context"]),
                preferred=str(_field(r, "preferred", path, line)),
                rejected=str(_field(r, "rejected", path, line)),
                part=part_of("wikieval", question),
            )
        )
    return out


_EVIDENCE_HEAD = re.compile(r"^\[\d+\]\s+\S+\s*")


@dataclass(frozen=True)
class ExpertQARecord:
    """One line of ExpertQA's ``claims_val.jsonl``: as the set gives it (``expertqa_records``),
    or as the judges read it (``expertqa_claims``)."""

    question: str
    claim: str
    evidence: tuple[str, ...]
    """The cited passages: as given, each headed by its ``[n] URL`` (some are the head alone);
    as the judges read them, the passage texts (``evidence_passages``)."""
    support: str
    informativeness: str | None
    q_index: str
    system: str
    claim_index: str

    @property
    def group(self) -> str:
        """The question: the split keeps its claims together."""
        return self.q_index

    @property
    def part(self) -> Part:
        return part_of("expertqa", self.q_index)

    @property
    def supported(self) -> int:
        return int(self.support == "Complete")


def expertqa_records(folder: Path) -> list[ExpertQARecord]:
    """The records of ``folder/claims_val.jsonl``."""
    path = folder / "claims_val.jsonl"
    out: list[ExpertQARecord] = []
    for line, r in _records(path):
        raw = r.get("evidence") or []
        out.append(
            ExpertQARecord(
                question=str(_field(r, "question", path, line)),
                claim=str(_field(r, "claim", path, line)),
                evidence=tuple(e for e in raw if isinstance(e, str))
                if isinstance(raw, list)
                else (),
                support=str(r.get("support") or ""),
                informativeness=r.get("informativeness"),
                q_index=str(_field(r, "q_index", path, line)),
                system=str(r.get("system", "")),
                claim_index=str(r.get("claim_index", "")),
            )
        )
    return out


def evidence_passages(raw: Iterable[object]) -> tuple[str, ...]:
    """The text of each cited passage without its ``[n] URL`` head; a citation whose page text
    is missing (only the head, as for about a quarter of the claims) is no evidence and is
    dropped, so a claim cited to URLs only has no evidence."""
    texts = (_EVIDENCE_HEAD.sub("", e).strip() for e in raw if isinstance(e, str))
    return tuple(t for t in texts if t)


def expertqa_claims(folder: Path) -> list[ExpertQARecord]:
    """``expertqa_records`` as the judges read them: citation markers removed from the claim,
    the evidence its passage texts (see the module docstring)."""
    return [
        replace(r, claim=strip_citations(r.claim), evidence=evidence_passages(r.evidence))
        for r in expertqa_records(folder)
    ]


def support_claims(claims: list[ExpertQARecord]) -> list[ExpertQARecord]:
    """Claims with evidence and a support label of Complete / Incomplete / Partial."""
    return [c for c in claims if c.evidence and c.support in ("Complete", "Incomplete", "Partial")]


@dataclass(frozen=True)
class HaluQuestQARow:
    """One question of HaluQuestQA with its two answers and the experts' marks."""

    index: int
    """The row's position in the file (its group: the split is by question)."""
    question: str
    answers: tuple[str, str]
    sources: tuple[str, str]
    """Who wrote each answer (``ans1_label`` / ``ans2_label``)."""
    incomplete: frozenset[str]
    """The answers (``"answer1"``, ``"answer2"``) an expert marked an incomplete-answer span in."""
    irrelevant: frozenset[str]
    """The answers an expert marked an irrelevant span in."""
    preference: str
    """``ans_preference``: ``"Answer 1"``, ``"Answer 2"`` or another value (no preference)."""

    @property
    def part(self) -> Part:
        return part_of("haluquestqa", str(self.index))


def _marked(cell: str, path: Path, line: int) -> frozenset[str]:
    """``"['answer1', 'answer1']"`` -> ``{"answer1"}`` (blank -> none)."""
    try:
        value = ast.literal_eval(cell) if cell and cell.strip() else []
    except (ValueError, SyntaxError):
        raise DataError(
            f"not a list of marked answers: {cell[:60]!r}", path=path, line=line
        ) from None
    if not isinstance(value, list):
        raise DataError(f"not a list of marked answers: {cell[:60]!r}", path=path, line=line)
    return frozenset(str(v) for v in value)


def haluquestqa_rows(folder: Path) -> list[HaluQuestQARow]:
    """The rows of ``folder/HaluQuestQA.csv`` (tab-separated; its long cells need a raised
    ``csv.field_size_limit``, set here)."""
    path = existing_file(folder / "HaluQuestQA.csv")
    csv.field_size_limit(1 << 30)
    out: list[HaluQuestQARow] = []
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        start = 2
        for n, r in enumerate(reader):
            line, start = start, reader.line_num + 1
            cell = {k: v or "" for k, v in r.items() if isinstance(k, str)}
            for key in ("question_text", "ans1_text", "ans2_text"):
                if key not in r:
                    raise DataError(f"no column {key!r}", path=path, line=line)
            out.append(
                HaluQuestQARow(
                    index=n,
                    question=cell["question_text"],
                    answers=(cell["ans1_text"], cell["ans2_text"]),
                    sources=(cell.get("ans1_label", ""), cell.get("ans2_label", "")),
                    incomplete=_marked(cell.get("incomplete_ans_label", ""), path, line),
                    irrelevant=_marked(cell.get("irrelevance_label", ""), path, line),
                    preference=cell.get("ans_preference", ""),
                )
            )
    return out
