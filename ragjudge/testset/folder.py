"""Writing a test set as a BEIR-style folder that ``ragjudge sweep`` reads as it is.

    corpus.jsonl      the passages (a byte copy of a BEIR input's corpus file)
    queries.jsonl     {"_id", "text", "reference", "metadata": {type, answerable, short_answer,
                       sources, generator, prompt, template, filter_scores}}
    qrels/test.tsv    query-id, corpus-id, score (3 source, 2 / 1 another supporting passage)
    testset.json      the manifest: backend, generator, prompts, judges, seed, mix, thresholds,
                      the filter report, usage, status and notes

An unanswerable question has no qrels row (``ragjudge.io.load_testset`` keeps it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ragjudge.errors import ConfigError

from .corpus import Corpus
from .models import TestsetBuild


def _jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def check_out(out: str | Path) -> Path:
    """``out`` as a folder to write to: new, empty, or an earlier test set (refusing one
    that holds other files, before any work is done)."""
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise ConfigError(f"--out {root} exists and is not a folder")
    if root.is_dir():
        extra = [
            p.name
            for p in root.iterdir()
            if p.name not in {"corpus.jsonl", "queries.jsonl", "qrels", "testset.json"}
        ]
        if extra:
            raise ConfigError(
                f"--out {root} holds other files ({', '.join(sorted(extra)[:3])}); "
                "give an empty or new folder"
            )
    return root


def write_folder(build: TestsetBuild, corpus: Corpus, out: str | Path) -> Path:
    """Write the folder (refusing one that holds other files than a test set's)."""
    root = check_out(out)
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    if corpus.beir_corpus is not None and corpus.beir_corpus.suffix == ".jsonl":
        shutil.copyfile(corpus.beir_corpus, root / "corpus.jsonl")
    else:
        _jsonl(
            root / "corpus.jsonl",
            [
                {
                    "_id": d.id,
                    "title": d.title,
                    "text": d.text,
                    **({"metadata": d.metadata} if d.metadata else {}),
                }
                for d in corpus.documents
            ],
        )
    _jsonl(root / "queries.jsonl", [it.query_row() for it in build.items])
    with (root / "qrels" / "test.tsv").open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for it in build.items:
            for doc_id, grade in sorted(it.relevant.items(), key=lambda kv: (-kv[1], kv[0])):
                fh.write(f"{it.id}\t{doc_id}\t{grade}\n")
    (root / "testset.json").write_text(
        build.manifest.model_dump_json(indent=1) + "\n", encoding="utf-8"
    )
    return root
