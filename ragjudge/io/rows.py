"""Reading rows from JSONL, JSON and CSV/TSV files, each row located by file and line.

Every reader yields ``(line, row)`` with 1-based physical line numbers (for CSV, the line on
which the record starts; for a JSON array, the item's 1-based position). Missing files,
undecodable bytes, malformed JSON and ragged CSV rows raise ``DataError`` naming file and line.
Files ending in ``.gz`` are decompressed transparently. ``label_rows`` reads a label file or a
filled spot-check sheet (the one reader of their rows); ``split_contexts`` reads a sheet's
numbered ``contexts`` cell (both here, below the calibration and the judges that read them).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from ragjudge.errors import DataError

Row = dict[str, Any]

JSONL_SUFFIXES = {".jsonl", ".ndjson"}
CSV_SUFFIXES = {".csv", ".tsv"}


def existing_file(path: str | Path) -> Path:
    """``path`` as a Path, or a ``DataError`` when it is missing or not a file."""
    p = Path(path)
    if not p.exists():
        raise DataError("file not found", path=p)
    if not p.is_file():
        raise DataError("not a file", path=p)
    return p


def open_text(path: Path) -> IO[str]:
    """Open a UTF-8 (optionally BOM-prefixed, optionally gzipped) text file."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return path.open(encoding="utf-8-sig", newline="")


def file_format(path: Path) -> str:
    """``"jsonl"``, ``"json"``, ``"csv"`` or ``"tsv"`` from the suffix (before any ``.gz``)."""
    suffix = Path(path.name.removesuffix(".gz")).suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix == ".json":
        return "json"
    if suffix in CSV_SUFFIXES:
        return suffix[1:]
    raise DataError(
        f"unknown file type {suffix or '(none)'!r}: expected .jsonl, .ndjson, .json, .csv or .tsv",
        path=path,
    )


def _raw_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Decoded physical lines with their line endings, decoded one by one so that a decoding
    error names its line."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        for line_no, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"not valid UTF-8 ({exc.reason})", path=path, line=line_no) from exc
            if line_no == 1:
                text = text.removeprefix("\ufeff")
            yield line_no, text


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Physical lines without their line ending; decoding errors name the line."""
    for line_no, text in _raw_lines(path):
        yield line_no, text.rstrip("\r\n")


def iter_jsonl(path: Path) -> Iterator[tuple[int, Row]]:
    for line_no, text in iter_lines(path):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"malformed JSON: {exc.msg} (column {exc.colno})", path=path, line=line_no
            ) from exc
        if not isinstance(row, dict):
            raise DataError(
                f"expected a JSON object, got {type(row).__name__}", path=path, line=line_no
            )
        yield line_no, row


def iter_json_array(path: Path) -> Iterator[tuple[int, Row]]:
    try:
        with open_text(path) as fh:
            data = json.load(fh)
    except UnicodeDecodeError as exc:
        raise DataError(f"not valid UTF-8 ({exc.reason})", path=path) from exc
    except json.JSONDecodeError as exc:
        raise DataError(
            f"malformed JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno
        ) from exc
    if not isinstance(data, list):
        raise DataError("expected a JSON array of objects (or use .jsonl)", path=path)
    for i, row in enumerate(data, start=1):
        if not isinstance(row, dict):
            raise DataError(
                f"item {i}: expected a JSON object, got {type(row).__name__}", path=path
            )
        yield i, row


def iter_csv(path: Path, *, delimiter: str = ",") -> Iterator[tuple[int, Row]]:
    """Rows of a CSV/TSV file with a header row, each with the physical line it starts on.

    Blank lines (before the header too) are skipped but counted; a quoted cell's line breaks
    count. Header names are stripped. An empty file, a repeated header name, a quote left open
    and a row with more or fewer cells than the header are ``DataError``s naming the line."""
    # strict: a quote left open is an error (not a field running to the end of the file)
    reader = csv.reader((text for _, text in _raw_lines(path)), delimiter=delimiter, strict=True)
    header: list[str] | None = None
    start = 1
    try:
        for values in reader:
            # every physical line is consumed by some record (a blank line is an empty one),
            # so the next record starts on the line after the last one read
            line_no, start = start, reader.line_num + 1
            if not values or (len(values) == 1 and not values[0].strip()):
                continue
            if header is None:
                header = [h.strip() for h in values]
                dupes = sorted({h for h in header if header.count(h) > 1})
                if dupes:
                    raise DataError(f"header repeats column(s) {dupes}", path=path, line=line_no)
                continue
            if len(values) != len(header):
                raise DataError(
                    f"row has {len(values)} fields, the header has {len(header)}",
                    path=path,
                    line=line_no,
                )
            yield line_no, dict(zip(header, values, strict=True))
    except csv.Error as exc:
        hint = "; is a quote left open?" if "end of data" in str(exc) else ""
        raise DataError(f"malformed CSV: {exc}{hint}", path=path, line=start) from exc
    if header is None:
        raise DataError("empty file: expected a header row", path=path, line=1)


def iter_rows(path: str | Path) -> Iterator[tuple[int, Row]]:
    """Rows of a JSONL, JSON-array, CSV or TSV file (chosen by suffix)."""
    p = existing_file(path)
    fmt = file_format(p)
    if fmt == "jsonl":
        yield from iter_jsonl(p)
    elif fmt == "json":
        yield from iter_json_array(p)
    else:
        yield from iter_csv(p, delimiter="\t" if fmt == "tsv" else ",")


def pick_field(
    row: Row,
    explicit: str | None,
    candidates: Sequence[str],
    *,
    role: str,
    path: Path,
    line: int,
    required: bool = True,
) -> str | None:
    """The column holding ``role``: ``explicit`` if given (must exist), else the first candidate.

    A missing explicit field or (when ``required``) no candidate at all is a ``DataError`` that
    lists the fields the row has.
    """
    if explicit is not None:
        if explicit not in row:
            raise DataError(
                f"no field {explicit!r} for the {role} (row has {sorted(row)})",
                path=path,
                line=line,
            )
        return explicit
    for name in candidates:
        if name in row:
            return name
    if required:
        raise DataError(
            f"no {role} field: looked for {list(candidates)}, row has {sorted(row)}; "
            f"name it with the {role}_field option",
            path=path,
            line=line,
        )
    return None


def label_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row) of every row of a label file or spot-check sheet: the one reader of
    their rows (``load_labels``, ``fit-judges`` and ``--rejudge`` all read through it).

    JSON Lines when the suffix is ``.jsonl``, ``.ndjson`` or ``.json`` (``io.rows.iter_jsonl``:
    blank lines skipped), else CSV with a header row (``io.rows.iter_csv``), tab-separated when
    the suffix is ``.tsv``; either may start with a byte-order mark.
    The line is the physical line a row starts on (an editor's line number: the header's and
    the cells' quoted line breaks and blank lines count; a sheet's contexts cell spans several).
    A missing file, a line that is not a JSON object, a CSV quote left open and a CSV row with
    more or fewer cells than its header (ragged) are ``DataError``s naming the file and line."""
    if not path.is_file():
        raise DataError(
            "a folder, not a label file" if path.is_dir() else "label file not found", path=path
        )
    if path.suffix.lower() in {".jsonl", ".ndjson", ".json"}:
        yield from iter_jsonl(path)
        return
    yield from iter_csv(path, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")


_CONTEXT_MARK = re.compile(r"(?:^|\n\n)\[(\d+)\] ")


def split_contexts(cell: str) -> list[str]:
    """Inverse of the sheet's ``contexts`` cell: ``"[1] a\\n\\n[2] b"`` -> ``["a", "b"]``."""
    marks: list[re.Match[str]] = []
    for m in _CONTEXT_MARK.finditer(cell):
        if int(m.group(1)) == len(marks) + 1:  # "[n]" inside a context is text, not a mark
            marks.append(m)
    ends = [m.start() for m in marks[1:]] + ([len(cell)] if marks else [])
    return [cell[m.end() : end] for m, end in zip(marks, ends, strict=True)]
