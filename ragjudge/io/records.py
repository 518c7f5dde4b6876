"""Turning raw rows into ``Document`` and ``TestCase`` records, with located errors.

Field names are resolved once per file from the first row (an explicit ``*_field`` wins; else
the first usual name present) and then required in every row. Fields that are not mapped go
into ``metadata`` (``extra="metadata"``, the default), are dropped (``"ignore"``) or are an error
(``"forbid"``); a ``metadata`` field holding an object is merged into ``metadata``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ragjudge.errors import DataError
from ragjudge.schema import Document, TestCase

from .rows import Row, pick_field

Extra = Literal["metadata", "ignore", "forbid"]

DOC_ID_FIELDS = ("_id", "id", "doc_id", "docid", "pid", "corpus-id")
DOC_TEXT_FIELDS = ("text", "contents", "content", "body", "passage")
DOC_TITLE_FIELDS = ("title",)
CASE_ID_FIELDS = ("_id", "id", "query_id", "qid", "case_id", "question_id", "query-id")
CASE_QUESTION_FIELDS = ("question", "query", "text")
CASE_REFERENCE_FIELDS = ("reference", "answer", "reference_answer", "ground_truth", "gold_answer")
CASE_RELEVANT_FIELDS = ("relevant", "relevant_docs", "qrels")


def as_id(value: Any, *, role: str, path: Path, line: int) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise DataError(f"{role} must be a string or integer, got {value!r}", path=path, line=line)
    text = str(value).strip()
    if not text:
        raise DataError(f"empty {role}", path=path, line=line)
    return text


def as_grade(value: Any, *, doc_id: str, path: Path, line: int) -> int:
    """An integer relevance grade; integral floats and digit strings are accepted."""
    if isinstance(value, bool):
        raise DataError(
            f"grade of {doc_id!r} must be an integer, got {value!r}", path=path, line=line
        )
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise DataError(f"grade of {doc_id!r} must be an integer, got {value!r}", path=path, line=line)


def parse_relevant(value: Any, *, path: Path, line: int) -> dict[str, int]:
    """Graded relevance from ``{id: grade}``, ``[id, ...]`` (grade 1) or, in CSV cells, JSON or
    a list of ``id`` / ``id:grade`` separated by ``;``, ``,`` or spaces."""
    if value is None:
        return {}
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return {}
        if text[0] in "[{":
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataError(
                    f"relevant: malformed JSON ({exc.msg})", path=path, line=line
                ) from exc
        else:
            out: dict[str, int] = {}
            for token in re.split(r"[;,\s]+", text):
                doc, _, grade = token.partition(":")
                doc_id = as_id(doc, role="relevant document id", path=path, line=line)
                out[doc_id] = as_grade(grade, doc_id=doc_id, path=path, line=line) if grade else 1
            return out
    if isinstance(value, dict):
        return {
            (d := as_id(k, role="relevant document id", path=path, line=line)): as_grade(
                g, doc_id=d, path=path, line=line
            )
            for k, g in value.items()
        }
    if isinstance(value, list):
        return {as_id(k, role="relevant document id", path=path, line=line): 1 for k in value}
    raise DataError(
        f"relevant must be an object, a list or a string, got {value!r}", path=path, line=line
    )


def _metadata(row: Row, used: set[str], extra: Extra, *, path: Path, line: int) -> dict[str, Any]:
    rest = {k: v for k, v in row.items() if k not in used}
    if extra == "ignore" or not rest:
        return {}
    if extra == "forbid":
        raise DataError(f"unknown field(s) {sorted(rest)}", path=path, line=line)
    meta = rest.pop("metadata", None)
    if isinstance(meta, str) and meta.strip().startswith("{"):
        try:
            meta = json.loads(meta)
        except json.JSONDecodeError as exc:
            raise DataError(f"metadata: malformed JSON ({exc.msg})", path=path, line=line) from exc
    if isinstance(meta, dict):
        return {**meta, **rest}
    if meta is not None and meta != "":
        rest["metadata"] = meta
    return rest


@dataclass
class DocumentFields:
    """Column names for documents; unresolved names are found from the first row."""

    id: str | None = None
    text: str | None = None
    title: str | None = None
    extra: Extra = "metadata"
    skip_empty: bool = False
    _resolved: bool = False

    def to_document(self, row: Row, *, path: Path, line: int) -> Document | None:
        """The row as a Document; ``None`` for an empty text when ``skip_empty``."""
        if not self._resolved:
            self.id = pick_field(row, self.id, DOC_ID_FIELDS, role="id", path=path, line=line)
            self.text = pick_field(
                row, self.text, DOC_TEXT_FIELDS, role="text", path=path, line=line
            )
            self.title = pick_field(
                row,
                self.title,
                DOC_TITLE_FIELDS,
                role="title",
                path=path,
                line=line,
                required=False,
            )
            self._resolved = True
        assert self.id is not None and self.text is not None
        for name in (self.id, self.text):
            if name not in row:
                raise DataError(f"row has no field {name!r}", path=path, line=line)
        doc_id = as_id(row[self.id], role="document id", path=path, line=line)
        text = row[self.text]
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise DataError(
                f"text of {doc_id!r} must be a string, got {text!r}", path=path, line=line
            )
        if not text.strip():
            if self.skip_empty:
                return None
            raise DataError(f"document {doc_id!r} has an empty text", path=path, line=line)
        title = row.get(self.title) if self.title else None
        if title is not None and not isinstance(title, str):
            raise DataError(f"title of {doc_id!r} must be a string", path=path, line=line)
        used = {self.id, self.text} | ({self.title} if self.title else set())
        return Document(
            id=doc_id,
            text=text,
            title=title or "",
            metadata=_metadata(row, used, self.extra, path=path, line=line),
        )


@dataclass
class CaseFields:
    """Column names for test cases; unresolved names are found from the first row."""

    id: str | None = None
    question: str | None = None
    reference: str | None = None
    relevant: str | None = None
    extra: Extra = "metadata"
    _resolved: bool = False

    def to_case(self, row: Row, *, path: Path, line: int) -> TestCase:
        if not self._resolved:
            self.id = pick_field(row, self.id, CASE_ID_FIELDS, role="id", path=path, line=line)
            self.question = pick_field(
                row, self.question, CASE_QUESTION_FIELDS, role="question", path=path, line=line
            )
            self.reference = pick_field(
                row,
                self.reference,
                CASE_REFERENCE_FIELDS,
                role="reference",
                path=path,
                line=line,
                required=False,
            )
            self.relevant = pick_field(
                row,
                self.relevant,
                CASE_RELEVANT_FIELDS,
                role="relevant",
                path=path,
                line=line,
                required=False,
            )
            self._resolved = True
        assert self.id is not None and self.question is not None
        for name in (self.id, self.question):
            if name not in row:
                raise DataError(f"row has no field {name!r}", path=path, line=line)
        case_id = as_id(row[self.id], role="case id", path=path, line=line)
        question = row[self.question]
        if not isinstance(question, str) or not question.strip():
            raise DataError(
                f"case {case_id!r} has an empty or non-text question", path=path, line=line
            )
        used = {self.id, self.question}
        meta_extra: dict[str, Any] = {}
        reference: str | None = None
        if self.reference:
            used.add(self.reference)
            reference, meta_extra = _reference(
                row.get(self.reference), case_id, path=path, line=line
            )
        relevant: dict[str, int] = {}
        if self.relevant:
            used.add(self.relevant)
            relevant = parse_relevant(row.get(self.relevant), path=path, line=line)
        return TestCase(
            id=case_id,
            question=question,
            reference=reference,
            relevant=relevant,
            metadata={**_metadata(row, used, self.extra, path=path, line=line), **meta_extra},
        )


def _reference(
    value: Any, case_id: str, *, path: Path, line: int
) -> tuple[str | None, dict[str, Any]]:
    """A reference answer: a string (empty means none), or a list whose first item is used
    (all of them are kept in ``metadata["answers"]``)."""
    if value is None:
        return None, {}
    if isinstance(value, str):
        return (value if value.strip() else None), {}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return (value[0] if value else None), {"answers": list(value)}
    raise DataError(
        f"reference of case {case_id!r} must be a string, a list of strings or null, got {value!r}",
        path=path,
        line=line,
    )
