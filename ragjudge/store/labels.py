"""Human labels kept in the run store file (a ``labels`` table beside the runs).

One row per (run, case, k, judge dimension, labeler): who labelled, when, the value (binary
0/1, or a number on the dimension's scale), an optional note, and the version of the judge
the label is compared with. Two labelers on one case are two rows (inter-annotator agreement
reads both); a labeler labelling again replaces their own row. ``ragjudge.ui.labels`` turns
them into what ``ragjudge agree`` reads.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from ragjudge.store.sqlite import RunStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS labels (
  run_id TEXT NOT NULL, case_id TEXT NOT NULL, k INTEGER NOT NULL, dimension TEXT NOT NULL,
  labeler TEXT NOT NULL, value REAL NOT NULL, raw TEXT NOT NULL, note TEXT NOT NULL DEFAULT '',
  judge_version TEXT NOT NULL DEFAULT '', answer TEXT, created_at TEXT NOT NULL,
  PRIMARY KEY (run_id, case_id, k, dimension, labeler)
)
"""


class StoredLabel(BaseModel):
    run_id: str
    case_id: str
    k: int
    dimension: str
    labeler: str
    value: float
    raw: str
    note: str = ""
    judge_version: str = ""
    answer: str | None = None
    """The answer text the labeler saw (the join checks it is still the run's answer)."""
    created_at: str = ""


class LabelStore:
    """The ``labels`` table of the run store file ``store.path``."""

    def __init__(self, store: RunStore) -> None:
        self.path = Path(store.path)
        with self._db() as con:
            con.execute(_SCHEMA)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=10.0)
        try:
            with con:
                yield con
        finally:
            con.close()

    def put(self, labels: Iterable[StoredLabel]) -> int:
        """Insert (or replace a labeler's own earlier) labels; returns how many."""
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        rows = [
            (
                lab.run_id, lab.case_id, lab.k, lab.dimension, lab.labeler, lab.value, lab.raw,
                lab.note, lab.judge_version, lab.answer, lab.created_at or now,
            )
            for lab in labels
        ]  # fmt: skip
        with self._db() as con:
            con.executemany("INSERT OR REPLACE INTO labels VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
        return len(rows)

    def labels(self, run_id: str) -> list[StoredLabel]:
        """Every label of the run, oldest first."""
        with self._db() as con:
            rows = con.execute(
                "SELECT run_id, case_id, k, dimension, labeler, value, raw, note, judge_version,"
                " answer, created_at FROM labels WHERE run_id = ? ORDER BY created_at, rowid",
                (run_id,),
            ).fetchall()
        fields = list(StoredLabel.model_fields)
        return [StoredLabel(**dict(zip(fields, r, strict=True))) for r in rows]
