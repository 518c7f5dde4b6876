"""Readers for the public human-label sets the offline judges are fitted and measured on.

The data is not shipped (it lives in ``../shared/data``); these readers turn its files into
pairs, claims and answers (``bench/fit_offline_judges.py`` makes fitting rows of them), with a
FIXED split into development and held-out parts: an item's part is ``held_out`` when
``sha256(f"{set}:{group}")`` mod 100 < ``HELD_OUT_PERCENT``,
where ``group`` is the question (so no question is in both parts).

- ``wikieval_pairs``: 150 pairwise items (faithfulness, answer_relevance, context_relevance).
- ``expertqa_claims``: claims (citation markers removed, as the judges remove them) with the
  text of their cited evidence (a citation whose page
  text the set lacks is dropped); support label Complete = 1, Incomplete / Partial = 0
  (Missing / N/A and claims left without evidence text are left out of ``support_claims``);
  informativeness Very relevant = 1, else 0.
- ``haluquestqa_answers``: each of the two answers of a question, with whether an expert marked an
  incomplete-answer span in it and whether one marked an irrelevant span.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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


def wikieval_pairs(root: Path) -> list[Pair]:
    out: list[Pair] = []
    with (root / "wikieval" / "wikieval_pairs.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            out.append(
                Pair(
                    id=r["id"],
                    dimension=r["dimension"],
                    question=r["question"],
                    context=r.get("context"),
                    preferred=r["preferred"],
                    rejected=r["rejected"],
                    part=part_of("wikieval", r["question"]),
                )
            )
    return out


_EVIDENCE_HEAD = re.compile(r"^\[\d+\]\s+\S+\s*")


@dataclass(frozen=True)
class Claim:
    """An ExpertQA claim with its cited evidence and expert labels."""

    question: str
    claim: str
    evidence: tuple[str, ...]
    support: str
    informativeness: str | None
    part: Part
    group: str

    @property
    def supported(self) -> int:
        return int(self.support == "Complete")


def evidence_passages(raw: Iterable[object]) -> tuple[str, ...]:
    """The text of each cited passage without its ``[n] URL`` head; a citation whose page text
    is missing (only the head, as for about a quarter of the claims) is no evidence and is
    dropped, so a claim cited to URLs only has no evidence."""
    texts = (_EVIDENCE_HEAD.sub("", e).strip() for e in raw if isinstance(e, str))
    return tuple(t for t in texts if t)


def expertqa_claims(root: Path) -> list[Claim]:
    out: list[Claim] = []
    with (root / "expertqa_val" / "claims_val.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            evidence = evidence_passages(r.get("evidence") or [])
            group = str(r["q_index"])
            out.append(
                Claim(
                    question=r["question"],
                    claim=strip_citations(r["claim"]),
                    evidence=evidence,
                    support=r.get("support") or "",
                    informativeness=r.get("informativeness"),
                    part=part_of("expertqa", group),
                    group=group,
                )
            )
    return out


def support_claims(claims: list[Claim]) -> list[Claim]:
    """Claims with evidence and a support label of Complete / Incomplete / Partial."""
    return [c for c in claims if c.evidence and c.support in ("Complete", "Incomplete", "Partial")]


@dataclass(frozen=True)
class LongAnswer:
    """A HaluQuestQA answer with the experts' span flags."""

    question: str
    answer: str
    incomplete: int
    irrelevant: int
    source: str
    part: Part
    group: str


def _flags(raw: str) -> set[str]:
    try:
        value = ast.literal_eval(raw) if raw and raw.strip() else []
    except (ValueError, SyntaxError):
        return set()
    return {str(v) for v in value} if isinstance(value, list) else set()


def haluquestqa_answers(root: Path) -> list[LongAnswer]:
    csv.field_size_limit(1 << 30)
    out: list[LongAnswer] = []
    path = root / "haluquestqa" / "HaluQuestQA.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        for n, r in enumerate(csv.DictReader(fh, delimiter="\t")):
            incomplete = _flags(r.get("incomplete_ans_label") or "")
            irrelevant = _flags(r.get("irrelevance_label") or "")
            question = r["question_text"]
            group = str(n)
            for which in ("1", "2"):
                out.append(
                    LongAnswer(
                        question=question,
                        answer=r[f"ans{which}_text"],
                        incomplete=int(f"answer{which}" in incomplete),
                        irrelevant=int(f"answer{which}" in irrelevant),
                        source=r.get(f"ans{which}_label") or "",
                        part=part_of("haluquestqa", group),
                        group=group,
                    )
                )
    return out
