"""Labels made in the ``ui`` as files: the label CSV ``ragjudge agree --labels`` reads, for
export, and the import of such a CSV (or of a filled ``spot-check`` sheet) into the run store
(``agree`` and the agreement page read stored labels with no file in between:
``calibrate.labels.stored_label_set``); and the Label page's queue, picked by the
sampler ``spot-check`` uses (``calibrate.spotcheck.select_items``)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ragjudge.calibrate.labels import load_labels
from ragjudge.calibrate.source import RunData
from ragjudge.calibrate.spotcheck import Pick, select_items
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


def import_csv(store: RunStore, run_id: str, path: str | Path, labeler: str) -> int:
    """Store the labels of a label CSV (``labels_csv``'s, or a filled spot-check sheet) for
    ``run_id``; a row without an annotator is ``labeler``'s. Returns how many."""
    rows = []
    label_file = load_labels(path)
    for h in label_file.labels:
        case_id, k = parse_item_id(h.item_id)
        rows.append(
            StoredLabel(
                run_id=run_id,
                case_id=case_id,
                k=k,
                judge=h.dimension,
                labeler=h.annotator or labeler,
                value=h.value,
                raw=h.raw,
                scale=label_file.scales.get(h.dimension),
            )
        )
    return len(store.add_labels(rows))


def queue(run: RunData, done: set[str], n: int = 20, seed: int = 0) -> list[Pick]:
    """The next items to label: ``spot-check``'s selection without the items in ``done``."""
    return select_items(run, n, exclude=done, seed=seed)
