"""The corpus a test set is generated from: a file, a folder of text files or a BEIR folder.

- A folder with ``corpus.jsonl`` is a BEIR folder: its documents are the passages, ids kept,
  and the test set's ``corpus.jsonl`` is a byte copy of it.
- Another folder: every ``*.txt`` / ``*.md`` file below it is a document (id = its relative
  path), cut into passages of at most ``CHUNK_SIZE`` characters (``ragjudge.io.chunk_documents``).
- A ``.txt`` / ``.md`` file: one document, cut the same way. Any other file is read by
  ``ragjudge.io.load_documents`` (JSONL, JSON array, CSV, TSV); its documents longer than
  ``CHUNK_SIZE`` are cut, shorter ones keep their ids.

Passages with fewer than ``MIN_WORDS`` words are too short to ask about and are left out of
question generation (they stay in the corpus).

The work per document is bounded, as the judges bound their input (``CappedJudge.input_cap``):
questions are asked about at most ``MAX_PASSAGES_PER_DOCUMENT`` passages of one document, spread
evenly over it (passage ``floor(i * m / cap)`` of its ``m`` for ``i < cap``), so a 4.5 MB file
costs what a 100-passage one does; every passage stays in the corpus (retrieval, grading), and
``Corpus.notes`` says which documents were cut and how much.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ragjudge.errors import DataError
from ragjudge.schema import Document
from ragjudge.text import tokens

CHUNK_SIZE = 1000
MIN_WORDS = 20
MAX_PASSAGES_PER_DOCUMENT = 100
NOTED_DOCUMENTS = 3
"""Documents named one by one in the note on cut documents (the rest are counted)."""
TEXT_SUFFIXES = (".txt", ".md")


@dataclass(frozen=True)
class Corpus:
    """The passages, and the BEIR corpus file they came from (None when converted)."""

    name: str
    documents: list[Document]
    beir_corpus: Path | None

    @cached_property
    def _long_enough(self) -> list[Document]:
        return [d for d in self.documents if len(tokens(d.text)) >= MIN_WORDS]

    @cached_property
    def _asked(self) -> tuple[list[Document], list[str]]:
        by_doc: dict[str, list[Document]] = defaultdict(list)
        for d in self._long_enough:
            by_doc[d.doc_id].append(d)
        keep: set[str] = set()
        cut: list[str] = []
        for doc_id, parts in by_doc.items():
            m, cap = len(parts), MAX_PASSAGES_PER_DOCUMENT
            if m > cap:
                chars = sum(len(p.text) for p in parts)
                cut.append(f"{doc_id} ({m:,} passages, {chars:,} characters)")
                parts = [parts[i * m // cap] for i in range(cap)]
            keep.update(p.id for p in parts)
        notes = []
        if cut:
            named = "; ".join(cut[:NOTED_DOCUMENTS])
            more = f" and {len(cut) - NOTED_DOCUMENTS} more" if len(cut) > NOTED_DOCUMENTS else ""
            notes.append(
                f"questions are asked about at most {MAX_PASSAGES_PER_DOCUMENT} passages of one "
                f"document, spread evenly over it; cut: {named}{more}. Every passage stays in "
                "the corpus for retrieval and grading"
            )
        return [d for d in self._long_enough if d.id in keep], notes

    def usable(self) -> list[Document]:
        """Passages questions are asked about: long enough (``MIN_WORDS`` words or more), and
        at most ``MAX_PASSAGES_PER_DOCUMENT`` of one document (module docstring)."""
        return self._asked[0]

    def short(self) -> int:
        """How many passages are too short to ask about."""
        return len(self.documents) - len(self._long_enough)

    def notes(self) -> list[str]:
        """What was cut from the documents questions are asked about (empty when nothing)."""
        return self._asked[1]


def _split_long(docs: list[Document]) -> list[Document]:
    from ragjudge.io import chunk_documents

    out: list[Document] = []
    for d in docs:
        out.extend(chunk_documents([d], chunk_size=CHUNK_SIZE) if len(d.text) > CHUNK_SIZE else [d])
    return out


def _text_document(path: Path, doc_id: str) -> Document:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read as UTF-8 text ({exc})", path=path) from None
    return Document(id=doc_id, text=text, title=path.stem)


def load_corpus(path: str | Path) -> Corpus:
    """The passages of ``path`` (see the module docstring); no passage at all is a
    ``DataError``."""
    from ragjudge.io import load_documents
    from ragjudge.io.beir import find_folder_file

    p = Path(path)
    beir = find_folder_file(p, "corpus.jsonl") if p.is_dir() else None
    if p.is_dir():
        if beir is not None:
            docs = load_documents(beir, skip_empty=True)
        else:
            files = sorted(f for f in p.rglob("*") if f.suffix in TEXT_SUFFIXES and f.is_file())
            docs = _split_long(
                [_text_document(f, f.relative_to(p).as_posix()) for f in files if f.stat().st_size]
            )
    elif p.is_file():
        if p.suffix in TEXT_SUFFIXES:
            docs = _split_long([_text_document(p, p.stem)]) if p.stat().st_size else []
        else:
            docs = _split_long(load_documents(p, skip_empty=True))
    else:
        raise DataError("corpus not found", path=p)
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise DataError("the corpus has no passages (no non-empty text)", path=p)
    return Corpus(name=p.resolve().stem, documents=docs, beir_corpus=beir)
