"""Loading documents and test cases from JSONL, JSON-array, CSV or TSV files.

Contract: ids are unique within a file (a repeat is a ``DataError`` naming both lines), every
document has a non-empty text (or is skipped with a counted warning when ``skip_empty``), and
every error names the file and line.
"""

from __future__ import annotations

from pathlib import Path

from ragjudge.errors import DataError
from ragjudge.schema import Document, TestCase

from .diagnostics import warn_counted
from .records import CaseFields, DocumentFields, Extra
from .rows import existing_file, iter_rows


def load_documents(
    path: str | Path,
    *,
    id_field: str | None = None,
    text_field: str | None = None,
    title_field: str | None = None,
    extra: Extra = "metadata",
    skip_empty: bool = False,
) -> list[Document]:
    """Documents from a file; fields default to ``_id``/``id``/``doc_id``, ``text``, ``title``."""
    p = existing_file(path)
    fields = DocumentFields(
        id=id_field, text=text_field, title=title_field, extra=extra, skip_empty=skip_empty
    )
    docs: list[Document] = []
    seen: dict[str, int] = {}
    skipped: list[str] = []
    for line, row in iter_rows(p):
        doc = fields.to_document(row, path=p, line=line)
        if doc is None:
            skipped.append(str(row.get(fields.id or "", f"line {line}")))
            continue
        if doc.id in seen:
            raise DataError(
                f"duplicate document id {doc.id!r} (first at line {seen[doc.id]})",
                path=p,
                line=line,
            )
        seen[doc.id] = line
        docs.append(doc)
    warn_counted("documents with an empty text were skipped", skipped, path=p)
    return docs


def load_cases(
    path: str | Path,
    *,
    id_field: str | None = None,
    question_field: str | None = None,
    reference_field: str | None = None,
    relevant_field: str | None = None,
    extra: Extra = "metadata",
) -> list[TestCase]:
    """Test cases from a file: id, question, optional reference answer and graded relevance.

    ``relevant`` may be ``{doc_id: grade}``, a list of ids (grade 1) or, in CSV, a cell such as
    ``d1:3;d2:1``. Usual names are tried when a field is not given (see ``records``).
    """
    p = existing_file(path)
    fields = CaseFields(
        id=id_field,
        question=question_field,
        reference=reference_field,
        relevant=relevant_field,
        extra=extra,
    )
    cases: list[TestCase] = []
    seen: dict[str, int] = {}
    for line, row in iter_rows(p):
        case = fields.to_case(row, path=p, line=line)
        if case.id in seen:
            raise DataError(
                f"duplicate case id {case.id!r} (first at line {seen[case.id]})", path=p, line=line
            )
        seen[case.id] = line
        cases.append(case)
    return cases
