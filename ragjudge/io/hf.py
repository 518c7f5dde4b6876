"""Hugging Face ``datasets``: loading from LOCAL files only, and exporting results.

``load_hf`` reads a folder written by ``Dataset.save_to_disk`` (``load_from_disk``) or a local
JSON/JSONL/CSV/TSV/Parquet file (``load_dataset(<builder>, data_files=...)``, cached under
RAGJUDGE_HOME). A name that is not an existing local path is a ``DataError``: nothing is ever
downloaded from the Hub. Rows become Documents or TestCases with the same field rules as
``load_documents`` / ``load_cases``; errors name the file and the 1-based row.

``to_hf_dataset`` turns records into a ``Dataset``. Mapping values (``relevant``, ``metadata``)
and lists of objects are stored as JSON text so that every row shares one Arrow schema;
``load_hf`` decodes them back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from ragjudge.errors import ConfigError, DataError
from ragjudge.home import state_path
from ragjudge.schema import Document, TestCase

from .records import CASE_QUESTION_FIELDS, CaseFields, DocumentFields
from .rows import file_format

# The repository's own top-level ``datasets/`` folder (the demo data) shadows the library for
# static analysis, so the library is imported at run time and typed as Any.
HFDataset = Any


def _hf() -> Any:
    import importlib

    return importlib.import_module("datasets")


_BUILDERS = {"jsonl": "json", "json": "json", "csv": "csv", "tsv": "csv"}
_DOC_OPTIONS = {"id_field", "text_field", "title_field", "extra", "skip_empty"}
_CASE_OPTIONS = {"id_field", "question_field", "reference_field", "relevant_field", "extra"}


def _open(path: Path, split: str | None) -> HFDataset:
    datasets = _hf()

    if path.is_dir():
        try:
            loaded = datasets.load_from_disk(str(path))
        except FileNotFoundError as exc:
            raise DataError(f"not a dataset saved with save_to_disk ({exc})", path=path) from exc
        if isinstance(loaded, datasets.DatasetDict):
            if split is None:
                if len(loaded) != 1:
                    raise ConfigError(f"{path}: choose a split among {sorted(loaded)}")
                split = next(iter(loaded))
            if split not in loaded:
                raise ConfigError(f"{path}: no split {split!r} (has {sorted(loaded)})")
            return loaded[split]
        return loaded
    if path.suffix.lower() == ".parquet":
        builder, kwargs = "parquet", {}
    else:
        fmt = file_format(path)
        builder, kwargs = _BUILDERS[fmt], ({"delimiter": "\t"} if fmt == "tsv" else {})
    cache = state_path("hf_datasets")
    cache.mkdir(exist_ok=True)
    try:
        ds = datasets.load_dataset(
            builder, data_files=str(path), split=split or "train", cache_dir=str(cache), **kwargs
        )
    except Exception as exc:  # datasets raises many types for unreadable files
        raise DataError(f"datasets could not read the file: {exc}", path=path) from exc
    return ds


def load_hf(
    path_or_name: str | Path,
    *,
    split: str | None = None,
    kind: Literal["auto", "documents", "cases"] = "auto",
    **field_names: Any,
) -> list[Document] | list[TestCase]:
    """Documents or test cases from a local dataset; ``kind="auto"`` picks cases when the rows
    have a question field (``question_field`` or one of question/query), else documents."""
    path = Path(path_or_name)
    if not path.exists():
        raise DataError(
            "no such local file or folder (ragjudge loads Hugging Face datasets from local files "
            "only and never downloads from the Hub)",
            path=path,
        )
    ds = _open(path, split)
    columns = set(ds.column_names)
    if kind == "auto":
        is_cases = "question_field" in field_names or any(
            f in columns for f in CASE_QUESTION_FIELDS if f != "text"
        )
        kind = "cases" if is_cases else "documents"
    allowed = _CASE_OPTIONS if kind == "cases" else _DOC_OPTIONS
    unknown = set(field_names) - allowed
    if unknown:
        raise ConfigError(
            f"unknown option(s) {sorted(unknown)} for {kind}; allowed: {sorted(allowed)}"
        )
    opts = {k.removesuffix("_field"): v for k, v in field_names.items()}
    rows: Iterable[tuple[int, dict[str, Any]]] = enumerate(ds, start=1)
    seen: dict[str, int] = {}
    if kind == "cases":
        case_fields = CaseFields(**opts)
        cases: list[TestCase] = []
        for line, row in rows:
            case = case_fields.to_case(row, path=path, line=line)
            _unique(case.id, line, seen, path)
            cases.append(case)
        return cases
    doc_fields = DocumentFields(**opts)
    docs: list[Document] = []
    for line, row in rows:
        doc = doc_fields.to_document(row, path=path, line=line)
        if doc is not None:
            _unique(doc.id, line, seen, path)
            docs.append(doc)
    return docs


def _unique(record_id: str, line: int, seen: dict[str, int], path: Path) -> None:
    if record_id in seen:
        raise DataError(
            f"duplicate id {record_id!r} (first at row {seen[record_id]})", path=path, line=line
        )
    seen[record_id] = line


def _encode(value: Any) -> Any:
    if isinstance(value, Mapping) or (
        isinstance(value, list) and any(isinstance(v, Mapping | list) for v in value)
    ):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return value


def to_hf_dataset(rows: Sequence[BaseModel] | Sequence[Mapping[str, Any]]) -> HFDataset:
    """Records (pydantic models or dicts) as a ``datasets.Dataset``, one row each."""
    datasets = _hf()

    records = [(r.model_dump(mode="json") if isinstance(r, BaseModel) else dict(r)) for r in rows]
    return datasets.Dataset.from_list([{k: _encode(v) for k, v in rec.items()} for rec in records])
