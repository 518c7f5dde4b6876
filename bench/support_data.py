"""Claim-support pairs from the shared human-labelled sets, split by group, plus made-up hard
negatives: the data of bench/train_support_model.py and bench/lodo_support_model.py.

Every item is ``Item(set, group, split, claim, passages, label)``: ``passages`` are the evidence
windows (``ragjudge.judges.offline.windows``) of the item's source, ``label`` 1 = the source
supports the claim, 0 = not ("partially supported" is 0, as the data README says).

Splits are by group, never by row (``split_of``: a stable hash of the group key -> test 30%,
val 10%, train 60%), except where the set has an official split that is itself by group:
WiCE (dev -> train/val, test -> test), HealthVer (dev -> train/val, test -> test), BEGIN (the
three dev files -> train/val, the WoW test file -> test), SciFact (train -> train/val,
validation -> test). Groups: SummEdits document, Factcheck-GPT claim, LFQA question, QAGS article,
Climate-FEVER claim, HealthVer claim, WiCE claim, BEGIN knowledge snippet, SciFact claim.

Claims per set:
- SummEdits: a summary is several sentences; a consistent summary's sentences are supported
  claims; an inconsistent edit's claims are the sentences that differ from the seed summary's
  (the edited ones; the whole summary when no sentence is unchanged). ``summary_items`` keeps
  the whole summaries (the human label's unit) for evaluation.
- WiCE: training passages of a claim with annotated supporting sentences are those sentences
  (their first alternative set); otherwise the windows of the cited page.
- BEGIN: "Generic" responses are dropped.
- SciFact: SUPPORT rationale -> 1, CONTRADICT -> 0, claims without evidence against their cited
  abstract -> 0.

Hard negatives (``hard_negatives``), made from supported training pairs, label 0, each a minimal
edit of the claim that the passage then no longer supports:
- ``number``: one number of the claim changed (a year moved by 1-9, other numbers scaled or
  shifted) to a value absent from the passage;
- ``name``: one capitalised name of the claim that the passage contains swapped for another
  capitalised name of the passage the claim lacks;
- ``negation``: "not" put after the claim's first is/are/was/were/can/will/has/have/had.

Edited pairs (``edited_pairs``, set ``edits:scifact_corpus``), for a model trained without the
human sets: sentences of SciFact corpus abstracts that hold a number or a name, each once as a
supported claim against the abstract's window with the most of its words (label 1) and once
edited as a hard negative above against the same window (label 0): what a RAG answer that
copies its source with one number, date or name wrong looks like.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ragjudge.judges.offline.windows import ranked, windows
from ragjudge.text import split_sentences

SETS = (
    "summedits",
    "wice",
    "factcheck_gpt",
    "lfqa_verification",
    "begin",
    "qags",
    "climate_fever",
    "healthver",
    "scifact",
)
"""Claim-support sets (``scifact`` is training data only; the others are also LODO folds)."""
LODO_SETS = SETS[:-1]


@dataclass
class Item:
    set: str
    group: str
    split: str
    claim: str
    passages: list[str]
    label: int
    kind: str = "human"
    raw: str = ""
    """The original label where the set has a 'partial' grade (WiCE, LFQA, Factcheck-GPT)."""
    parts: list[str] = field(default_factory=list)
    """For a whole summary: its sentences (each judged, the least supported counts)."""

    def best(self) -> str:
        """The passage with the most claim words (what a training pair uses)."""
        return self.passages[ranked(self.claim, self.passages)[0]] if self.passages else ""


def split_of(group: str, official: str | None = None) -> str:
    """train / val / test of a group (see the module docstring)."""
    h = int(hashlib.sha256(group.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    if official == "test":
        return "test"
    if official == "dev":
        return "val" if h < 0.15 else "train"
    return "test" if h < 0.3 else "val" if h < 0.4 else "train"


def _jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _sentences(text: str) -> list[str]:
    return [s for s in split_sentences(text) if len(s.split()) >= 3]


def summedits(root: Path, whole: bool = False) -> list[Item]:
    out: list[Item] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted((root / "summedits").glob("summedits_*.json")):
        for row in json.loads(path.read_text(encoding="utf-8")):
            doc = row["doc"]
            group = "summedits:" + hashlib.sha256(doc.encode()).hexdigest()[:16]
            split = split_of(group)
            label = int(row["label"])
            passages = windows(doc)
            if whole:
                sents = _sentences(row["summary"]) or [row["summary"]]
                out.append(
                    Item("summedits", group, split, row["summary"], passages, label, parts=sents)
                )
                continue
            sents = _sentences(row["summary"])
            if label == 1:
                claims = sents
            else:
                orig = set(_sentences(row.get("original_summary") or ""))
                claims = [s for s in sents if s not in orig] or [row["summary"]]
                if len(claims) == len(sents) and len(sents) > 1:
                    claims = [row["summary"]]
            for c in claims:
                if (group, c) in seen:
                    continue
                seen.add((group, c))
                out.append(Item("summedits", group, split, c, passages, label))
    return out


def wice(root: Path) -> list[Item]:
    out: list[Item] = []
    for part in ("dev", "test"):
        for row in _jsonl(root / "wice" / "entailment_retrieval" / "claim" / f"{part}.jsonl"):
            group = f"wice:{row['meta']['id']}"
            ev = row["evidence"]
            gold = row.get("supporting_sentences") or []
            passages = windows("\n".join(ev))
            if part == "dev" and gold:
                idx = [i for i in gold[0] if 0 <= i < len(ev)]
                if idx:
                    passages = [" ".join(ev[i] for i in sorted(idx))]
            label = int(row["label"] == "supported")
            out.append(
                Item(
                    "wice",
                    group,
                    split_of(group, part),
                    row["claim"],
                    passages,
                    label,
                    raw=row["label"],
                )
            )
    return out


def factcheck_gpt(root: Path) -> list[Item]:
    out = []
    for row in _jsonl(root / "factcheck_gpt" / "subtask3_claim_evidence_stance.jsonl"):
        group = "fc:" + row["claim"]
        label = int(row["stance"] == "completely-support")
        out.append(
            Item(
                "factcheck_gpt",
                group,
                split_of(group),
                row["claim"],
                windows(row["evidence"]),
                label,
                raw=row["stance"],
            )
        )
    return out


def lfqa_verification(root: Path) -> list[Item]:
    docs = json.loads((root / "lfqa_verification" / "docs" / "docs-webgpt.json").read_text())
    by_q = {d["question_id"]: [x["text"] for x in d["docs"]] for d in docs}
    cache: dict[int, list[str]] = {}
    out = []
    for row in _jsonl(root / "lfqa_verification" / "sentences.jsonl"):
        qid = row["question_id"]
        if qid not in cache:
            cache[qid] = [w for text in by_q.get(qid, []) for w in windows(text)]
        group = f"lfqa:{qid}"
        out.append(
            Item(
                "lfqa_verification",
                group,
                split_of(group),
                row["claim"],
                cache[qid],
                int(row["label"]),
                raw=row["label_raw"],
            )
        )
    return out


def begin(root: Path) -> list[Item]:
    files = [
        ("cmu-dog/begin_dev_cmu.tsv", "dev"),
        ("topicalchat/begin_dev_tc.tsv", "dev"),
        ("wow/begin_dev_wow.tsv", "dev"),
        ("wow/begin_test_wow.tsv", "test"),
    ]
    out = []
    for name, part in files:
        with (root / "begin" / name).open(encoding="utf-8") as f:
            rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(rows)
            for cells in rows:
                row = dict(zip(header, cells, strict=False))
                lab = row.get("begin_label", "")
                if lab.startswith("Generic") or not row.get("response"):
                    continue
                group = "begin:" + row["knowledge"]
                out.append(
                    Item(
                        "begin",
                        group,
                        split_of(group, part),
                        row["response"],
                        windows(row["knowledge"]),
                        int(lab.startswith("Fully")),
                    )
                )
    return out


def qags(root: Path) -> list[Item]:
    out = []
    cache: dict[str, list[str]] = {}
    for row in _jsonl(root / "qags" / "sentences.jsonl"):
        group = f"qags:{row['source']}:{row['article_index']}"
        if group not in cache:
            cache[group] = windows(row["context"])
        out.append(
            Item("qags", group, split_of(group), row["claim"], cache[group], int(row["label"]))
        )
    return out


def climate_fever(root: Path) -> list[Item]:
    out = []
    for row in _jsonl(root / "climate_fever" / "pairs.jsonl"):
        group = f"cf:{row['claim_id']}"
        out.append(
            Item(
                "climate_fever",
                group,
                split_of(group),
                row["claim"],
                windows(row["context"]),
                int(row["label"]),
            )
        )
    return out


def healthver(root: Path) -> list[Item]:
    out = []
    for part in ("dev", "test"):
        with (root / "healthver" / f"healthver_{part}.csv").open(encoding="utf-8") as f:
            for row in csv.DictReader(f):
                group = "hv:" + row["claim"]
                out.append(
                    Item(
                        "healthver",
                        group,
                        split_of(group, part),
                        row["claim"],
                        windows(row["evidence"]),
                        int(row["label"] == "Supports"),
                    )
                )
    return out


def scifact(root: Path) -> list[Item]:
    corpus = {}
    for row in _jsonl(root / "scifact" / "corpus.jsonl"):
        corpus[str(row["_id"])] = row["text"]
    out = []
    base = root / "scifact" / "original_scifact_claims"
    for name, part in (("claims_train.csv", "dev"), ("claims_validation.csv", "test")):
        with (base / name).open(encoding="utf-8") as f:
            for row in csv.DictReader(f):
                group = f"scifact:{row['id']}"
                lab = row.get("evidence_label") or ""
                doc = row.get("evidence_doc_id") or ""
                if not doc:
                    cited = re.findall(r"\d+", row.get("cited_doc_ids") or "")
                    doc = cited[0] if cited else ""
                if doc not in corpus:
                    continue
                out.append(
                    Item(
                        "scifact",
                        group,
                        split_of(group, part),
                        row["claim"],
                        windows(corpus[doc]),
                        int(lab == "SUPPORT"),
                    )
                )
    return out


LOADERS = {
    "summedits": summedits,
    "wice": wice,
    "factcheck_gpt": factcheck_gpt,
    "lfqa_verification": lfqa_verification,
    "begin": begin,
    "qags": qags,
    "climate_fever": climate_fever,
    "healthver": healthver,
    "scifact": scifact,
}


def load(root: Path, names: tuple[str, ...] = SETS) -> list[Item]:
    items: list[Item] = []
    for name in names:
        items.extend(i for i in LOADERS[name](root) if i.passages and i.claim.strip())
    return items


def eval_items(root: Path, name: str) -> list[Item]:
    """The items a held-out set is scored on: SummEdits as whole summaries, others as loaded."""
    items = summedits(root, whole=True) if name == "summedits" else LOADERS[name](root)
    return [i for i in items if i.passages and i.claim.strip()]


# ---- hard negatives ---------------------------------------------------------------------

_NUM = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*\b")
_AUX = re.compile(r"\b(is|are|was|were|can|will|has|have|had)\b(?!\s+not\b)")


def _other_number(raw: str, rng: random.Random) -> str:
    value = raw.replace(",", "")
    if re.fullmatch(r"1[5-9]\d\d|20\d\d", value):
        return str(int(value) + rng.choice([-1, 1]) * rng.randint(1, 9))
    if "." in value:
        return f"{float(value) * rng.choice([0.5, 1.5, 2.0, 3.0]):.{len(value.split('.')[1])}f}"
    n = int(value)
    return str(rng.choice([n * 2, n * 3, n + rng.randint(1, 9), max(0, n - rng.randint(1, 9))]))


def hard_negative(item: Item, rng: random.Random) -> Item | None:
    """One made-up unsupported variant of a supported item (module docstring), or None."""
    passage = item.best()
    claim = item.claim
    kinds = ["number", "name", "negation"]
    rng.shuffle(kinds)
    for kind in kinds:
        new = None
        if kind == "number":
            nums = _NUM.findall(claim)
            if nums:
                raw = rng.choice(nums)
                other = _other_number(raw, rng)
                if other != raw.replace(",", "") and other not in passage:
                    new = claim.replace(raw, other, 1)
        elif kind == "name":
            first = {m.start() for m in re.finditer(r"(?:^|[.!?]\s+)\S", claim)}
            names = [
                m for m in _NAME.finditer(claim) if m.start() not in first and m.group(0) in passage
            ]
            pool = sorted({n for n in _NAME.findall(passage) if n not in claim and len(n) > 3})
            if names and pool:
                m = rng.choice(names)
                new = claim[: m.start()] + rng.choice(pool) + claim[m.end() :]
        else:
            m = _AUX.search(claim)
            if m and " not " not in f" {claim} ":
                new = claim[: m.end()] + " not" + claim[m.end() :]
        if new and new != claim:
            return Item(item.set, item.group, item.split, new, [passage], 0, kind=kind)
    return None


def edited_pairs(root: Path, n: int, rng: random.Random) -> list[Item]:
    """Up to ``n`` pairs (``n // 2`` sentences) of the module docstring's edited pairs."""
    docs = list(_jsonl(root / "scifact" / "corpus.jsonl"))
    rng.shuffle(docs)
    out: list[Item] = []
    for doc in docs:
        if len(out) >= n:
            break
        sents = [s for s in _sentences(doc["text"]) if 8 <= len(s.split()) <= 40]
        sents = [s for s in sents if _NUM.search(s) or len(_NAME.findall(s)) > 1]
        if not sents:
            continue
        claim = rng.choice(sents)
        group = f"edits:{doc['_id']}"
        ws = windows(doc["text"])
        item = Item(
            "edits:scifact_corpus", group, "train", claim, [ws[ranked(claim, ws)[0]]], 1, "copied"
        )
        neg = hard_negative(item, rng)
        if neg is not None:
            out += [
                item,
                Item(item.set, group, "train", neg.claim, item.passages, 0, kind=neg.kind),
            ]
    return out
