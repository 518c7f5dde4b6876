"""Labels made in the ``ui`` as files: the label CSV ``ragjudge agree --labels`` reads, for
export, and the import of such a CSV (or of a filled ``spot-check`` sheet) into the run store
(``agree`` and the agreement page read stored labels with no file in between:
``calibrate.labels.stored_label_set``); the one duplicate rule of stored labels, ``agree``'s
(one label per item, dimension and labeler: ``unstored``); and the Label page's queue, picked
by the sampler ``spot-check`` uses (``calibrate.spotcheck.select_items``)."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragjudge.calibrate.labels import load_labels
from ragjudge.calibrate.source import RunData
from ragjudge.calibrate.spotcheck import Pick, select_items
from ragjudge.errors import DataError
from ragjudge.io.rows import label_rows
from ragjudge.store import RunStore, StoredLabel, parse_item_id

CSV_COLUMNS = (
    "item_id",
    "dimension",
    "label",
    "annotator",
    "note",
    "judge_version",
    "labelled_at",
)


def labels_csv(labels: list[StoredLabel]) -> str:
    """The labels as the CSV ``ragjudge agree --labels`` reads (one row per label)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for lab in labels:
        w.writerow(
            [
                lab.item_id,
                lab.judge,
                lab.raw,
                lab.labeler,
                lab.note,
                lab.judge_version or "",
                lab.created_at,
            ]
        )
    return buf.getvalue()


def judged_items(run: RunData) -> set[str]:
    """The item ids (``case@kK``) the run holds a judge result for: the items a label can be
    of (``agree`` refuses a label of any other)."""
    return {r.item_id for r in run.results}


def _key(label: StoredLabel) -> tuple[str, int, str, str]:
    return label.case_id, label.k, label.judge, label.labeler


def unstored(
    stored: Sequence[StoredLabel],
    rows: Sequence[StoredLabel],
    *,
    path: str | None = None,
    lines: Sequence[int] = (),
) -> list[StoredLabel]:
    """``rows`` without the labels ``stored`` (or an earlier row) holds already: the one
    duplicate rule of labels, ``agree``'s, one label per item, dimension and labeler. A repeat
    with the same value is dropped; with another value it is a ``DataError`` (at ``path``, line
    ``lines[i]`` for ``rows[i]`` when given): a stored label is never changed."""
    have = {_key(lab): lab for lab in stored}
    fresh = []
    for i, row in enumerate(rows):
        old = have.setdefault(_key(row), row)
        if old is row:
            fresh.append(row)
        elif old.value != row.value:
            raise DataError(
                f"{row.labeler} labelled {row.judge} of item {row.item_id} {old.raw!r} "
                f"already, {row.raw!r} here; a stored label is not changed",
                path=path,
                line=lines[i] if lines else None,
            )
    return fresh


def import_csv(
    store: RunStore, run: RunData, path: str | Path, labeler: str, *, shown: str | None = None
) -> int:
    """Store the labels of a label CSV (``labels_csv``'s, or a filled spot-check sheet) for the
    run ``run``; a row without an annotator is ``labeler``'s, and its ``note``,
    ``judge_version`` and ``labelled_at`` columns are kept when present. Every label must be
    of a judged item and a judge of the run; one stored already is skipped (``unstored``).
    Errors name the file as ``shown`` (default ``path``: an upload's own name, not the
    temporary file's). Returns how many labels were added."""
    name = shown or str(path)
    try:
        label_file = load_labels(path)
        extra = dict(label_rows(Path(path)))
    except DataError as exc:
        where = f"{exc.path}:{exc.line}: " if exc.line is not None else f"{exc.path}: "
        raise DataError(str(exc).removeprefix(where), path=name, line=exc.line) from None
    items, judges = judged_items(run), sorted({r.judge for r in run.results})
    rows = []
    for h in label_file.labels:
        if h.item_id not in items:
            raise DataError(
                f"item id {h.item_id!r} matches no judged item of run {run.source}",
                path=name,
                line=h.line,
            )
        if h.dimension not in judges:
            raise DataError(
                f"dimension {h.dimension!r} is no judge of run {run.source} "
                f"(judges: {', '.join(judges)})",
                path=name,
                line=h.line,
            )
        row = extra[h.line]
        case_id, k = parse_item_id(h.item_id)
        rows.append(
            StoredLabel(
                run_id=run.source,
                case_id=case_id,
                k=k,
                judge=h.dimension,
                labeler=h.annotator or labeler,
                value=h.value,
                raw=h.raw,
                scale=label_file.scales.get(h.dimension),
                note=_cell(row, "note"),
                judge_version=_cell(row, "judge_version") or None,
                created_at=_stamp(_cell(row, "labelled_at"), name, h.line),
            )
        )
    lines = [h.line for h in label_file.labels]
    fresh = unstored(store.labels(run.source), rows, path=name, lines=lines)
    return len(store.add_labels(fresh))


def _cell(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    return "" if value is None else str(value).strip()


def _stamp(text: str, path: str, line: int) -> str:
    """A ``labelled_at`` cell: blank (the import stamps the time), or an ISO 8601 time."""
    if text:
        try:
            dt.datetime.fromisoformat(text)
        except ValueError:
            raise DataError(
                f"labelled_at {text[:40]!r} is not an ISO 8601 time", path=path, line=line
            ) from None
    return text


def queue(run: RunData, done: set[str], n: int = 20, seed: int = 0) -> list[Pick]:
    """The next items to label: ``spot-check``'s selection without the items in ``done``."""
    return select_items(run, n, exclude=done, seed=seed)
