"""BEIR folders (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) as ``TestSet``s.

``load_beir`` reads a public BEIR collection: queries without judgments in the split are
dropped and documents with an empty text skipped (one counted warning each).
``load_testset`` reads ragjudge's own test sets (the format of ``datasets/demo/``): the same
folder layout, where a query row may also carry ``"reference"`` (a string or null) and
``"metadata"``; every query is kept, and one without judgments is an unanswerable question.
Empty document texts are errors there.

In both, qrels naming a query or a document that the folder does not have are dropped with a
counted warning, so every ``TestCase.relevant`` id is a document of the set.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

from ragjudge.errors import DataError
from ragjudge.schema import Document, Qrels, TestCase, TestSet

from .diagnostics import DataWarning, warn_counted
from .documents import load_cases, load_documents
from .trec import read_trec_qrels


def find_folder_file(folder: Path, *names: str) -> Path | None:
    """The first of ``names`` in ``folder``, each as it is or gzipped (``corpus.jsonl``, then
    ``corpus.jsonl.gz``); None when there is none."""
    for name in names:
        for candidate in (folder / name, folder / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    return None


def _folder_file(folder: Path, *names: str) -> Path:
    found = find_folder_file(folder, *names)
    if found is None:
        raise DataError(f"missing {names[0]} in the folder", path=folder)
    return found


def attach_qrels(
    documents: Sequence[Document],
    queries: Sequence[TestCase],
    qrels: Qrels,
    *,
    qrels_path: Path,
    queries_path: Path,
    corpus_path: Path,
    split: str,
    keep_unjudged: bool,
) -> list[TestCase]:
    """``queries`` with their judgments from ``qrels``, the one reading of qrels against a
    collection: judgments of a query not in ``queries`` or of a document not in ``documents``
    are dropped, each kind with one counted ``DataWarning`` naming ``qrels_path`` (a judged
    document that cannot be retrieved would cap recall below 1); a query left without a
    judgment is dropped (counted, naming ``queries_path``) unless ``keep_unjudged``; no judged
    document at all is a warning (no retrieval metric can be computed)."""
    doc_ids = {d.id for d in documents}
    query_ids = {q.id for q in queries}
    unknown_q = [q for q in qrels if q not in query_ids]
    unknown_d = sorted({d for docs in qrels.values() for d in docs if d not in doc_ids})
    warn_counted(
        f"qrels queries are not in {queries_path.name} and were dropped", unknown_q, path=qrels_path
    )
    warn_counted(
        f"qrels documents are not in {corpus_path.name} and were dropped",
        unknown_d,
        path=qrels_path,
    )
    clean: Qrels = {
        q: {d: g for d, g in docs.items() if d in doc_ids}
        for q, docs in qrels.items()
        if q in query_ids
    }
    cases: list[TestCase] = []
    unjudged: list[str] = []
    for case in queries:
        judged = clean.get(case.id)
        if not judged and not keep_unjudged:
            unjudged.append(case.id)
            continue
        cases.append(case.model_copy(update={"relevant": {**case.relevant, **(judged or {})}}))
    warn_counted(
        f"queries have no judgments in split {split!r} and were dropped",
        unjudged,
        path=queries_path,
    )
    if cases and not any(clean.values()):
        warnings.warn(
            DataWarning(
                f"{qrels_path}: no query has a judged document: retrieval metrics (P/R/F1@k, "
                "MRR, MAP, NDCG) cannot be computed"
            ),
            stacklevel=4,
        )
    return cases


def _load(folder: str | Path, split: str, *, keep_unjudged: bool, skip_empty: bool) -> TestSet:
    root = Path(folder)
    if not root.is_dir():
        raise DataError("folder not found", path=root)
    corpus = _folder_file(root, "corpus.jsonl")
    queries_path = _folder_file(root, "queries.jsonl")
    qrels_path = _folder_file(root, f"qrels/{split}.tsv", f"qrels/{split}.trec")
    documents = load_documents(corpus, skip_empty=skip_empty)
    queries = load_cases(queries_path, id_field="_id", question_field="text", relevant_field=None)
    qrels = read_trec_qrels(qrels_path)
    cases = attach_qrels(
        documents,
        queries,
        qrels,
        qrels_path=qrels_path,
        queries_path=queries_path,
        corpus_path=corpus,
        split=split,
        keep_unjudged=keep_unjudged,
    )
    return TestSet(name=root.resolve().name, documents=documents, cases=cases)


def load_beir(folder: str | Path, split: str = "test") -> TestSet:
    """A BEIR collection: only the queries judged in ``split``."""
    return _load(folder, split, keep_unjudged=False, skip_empty=True)


def load_testset(folder: str | Path, split: str = "test") -> TestSet:
    """A ragjudge test set folder: every query, with its reference answer and metadata."""
    return _load(folder, split, keep_unjudged=True, skip_empty=False)
