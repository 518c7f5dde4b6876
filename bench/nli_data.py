"""Natural-language-inference pairs as claim-support training items (bench/train_support_model.py
``--nli``), read from public repository snapshots brought here with the ``fetch`` tool.

A source is ``OWNER/REPO:PATH``: the file at ``PATH`` in the newest snapshot of ``OWNER/REPO``
under ``$RAGJUDGE_MIRRORS`` (default ``/work/.mirror``), read with ``git show`` (a snapshot
has no work tree); its commit is recorded (``Source``), so the model card names exactly what
was read. Nothing fetched is copied into the repository. Formats, told apart by the header:
- SNLI ``.jsonl`` (``sentence1``, ``sentence2``, ``gold_label``; "-" = no majority: dropped);
- MNLI / GLUE ``.tsv`` (``sentence1``, ``sentence2``, ``gold_label`` columns);
- SICK ``SICK.txt`` (``sentence_A``, ``sentence_B``, ``entailment_label``).

Label: entailment -> 1 (the premise supports the hypothesis as a claim); neutral and
contradiction -> 0 (not supported). Items are ``support_data.Item`` with set ``nli:NAME``
(NAME: the file's stem), split "train", group the premise.

Passages look like evidence windows, not single sentences (``pad``): with probability
``pad_share`` the premise is put at a random place among other premises of the same file
(drawn at random) until the passage has about ``words`` words, for supported and unsupported
pairs alike (so length tells nothing), so that the model learns to find support inside a longer
text, as the judges read a claim against a 64-word window.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

from support_data import Item

LABELS = {"entailment": 1, "neutral": 0, "contradiction": 0}


@dataclass(frozen=True)
class Source:
    repo: str
    path: str
    commit: str

    @property
    def name(self) -> str:
        return Path(self.path).stem.lower()


def mirrors() -> Path:
    return Path(os.environ.get("RAGJUDGE_MIRRORS", "/work/.mirror"))


def read(spec: str) -> tuple[Source, str]:
    """The text of ``OWNER/REPO:PATH`` and where it came from (module docstring)."""
    repo, _, path = spec.partition(":")
    git = mirrors() / repo.replace("/", "+") / "repo"
    if not path or not git.exists():
        raise SystemExit(f"{spec}: no snapshot at {git} (fetch github:{repo} first)")
    run = ["git", "-C", str(git)]
    commit = subprocess.run(
        [*run, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    text = subprocess.run(
        [*run, "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
    ).stdout
    return Source(repo, path, commit), text


def triples(text: str) -> list[tuple[str, str, str]]:
    """``(premise, hypothesis, label)`` rows of one file (formats: module docstring)."""
    head = text.split("\n", 1)[0]
    out: list[tuple[str, str, str]] = []
    if head.lstrip().startswith("{"):
        for line in text.splitlines():
            if line.strip():
                row = json.loads(line)
                out.append((row["sentence1"], row["sentence2"], row["gold_label"]))
    else:
        rows = csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
        a, b, lab = (
            ("sentence_A", "sentence_B", "entailment_label")
            if "sentence_A" in head
            else ("sentence1", "sentence2", "gold_label")
        )
        out.extend((r[a], r[b], r[lab]) for r in rows if r.get(a) and r.get(b))
    return [(p.strip(), h.strip(), lab.strip().lower()) for p, h, lab in out if lab]


def pad(premise: str, others: list[str], words: int, rng: random.Random) -> str:
    """``premise`` among other premises until about ``words`` words (module docstring)."""
    parts = [premise]
    n = len(premise.split())
    for _ in range(20):
        if n >= words or not others:
            break
        extra = rng.choice(others)
        if extra == premise:
            continue
        parts.insert(rng.randint(0, len(parts)), extra)
        n += len(extra.split())
    return " ".join(parts)


def load(
    specs: list[str], rng: random.Random, pad_share: float = 0.5, words: int = 48
) -> tuple[list[Item], list[Source]]:
    """Training items of every source (module docstring) and the sources read."""
    items: list[Item] = []
    sources: list[Source] = []
    for spec in specs:
        source, text = read(spec)
        sources.append(source)
        rows = [(p, h, LABELS[lab]) for p, h, lab in triples(text) if lab in LABELS]
        premises = sorted({p for p, _, _ in rows})
        for p, h, y in rows:
            passage = pad(p, premises, words, rng) if rng.random() < pad_share else p
            items.append(Item(f"nli:{source.name}", p, "train", h, [passage], y, kind="nli"))
    return items, sources
