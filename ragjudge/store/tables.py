"""The run store's tables at the newest schema version (SQLAlchemy Core), for both backends.

The migrations in ``migrations/versions`` bring any older store here; a change of a table goes
in a new migration and here together (``store check`` compares the two).
"""

from __future__ import annotations

from sqlalchemy import Column, Double, ForeignKey, Index, Integer, MetaData, Table, Text

metadata = MetaData()


def _run_id() -> Column[str]:
    return Column("run_id", Text, ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True)


meta = Table(
    "meta",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)
runs = Table(
    "runs",
    metadata,
    Column("run_id", Text, primary_key=True),
    Column("manifest", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("config_hash", Text, nullable=False),
    Column("dataset_hash", Text, nullable=False),
    Column("started_at", Text, nullable=False),
    Column("finished_at", Text),
)
tags = Table(
    "tags",
    metadata,
    _run_id(),
    Column("tag", Text, primary_key=True),
    Column("value", Text, nullable=False, server_default=""),
)
answers = Table(
    "answers",
    metadata,
    _run_id(),
    Column("case_id", Text, primary_key=True),
    Column("k", Integer, primary_key=True, autoincrement=False),
    Column("answer", Text, nullable=False),
)
judge_results = Table(
    "judge_results",
    metadata,
    _run_id(),
    Column("case_id", Text, primary_key=True),
    Column("k", Integer, primary_key=True, autoincrement=False),
    Column("judge", Text, primary_key=True),
    Column("status", Text, nullable=False),
    Column("score", Double),
    Column("result", Text, nullable=False),
)
rankings = Table(
    "rankings",
    metadata,
    _run_id(),
    Column("case_id", Text, primary_key=True),
    Column("ranking", Text, nullable=False),
)
retrieval_metrics = Table(
    "retrieval_metrics",
    metadata,
    _run_id(),
    Column("case_id", Text, primary_key=True),
    Column("k", Integer, primary_key=True, autoincrement=False),
    Column("metric", Text, primary_key=True),
    Column("value", Double, nullable=False),
)
cases = Table(
    "cases",
    metadata,
    _run_id(),
    Column("case_id", Text, primary_key=True),
    Column("testcase", Text, nullable=False),
)
ledger = Table(
    "ledger",
    metadata,
    _run_id(),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("entry", Text, nullable=False),
)
labels = Table(
    "labels",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Text, ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False),
    Column("case_id", Text, nullable=False),
    Column("k", Integer, nullable=False),
    Column("judge", Text, nullable=False),
    Column("value", Double, nullable=False),
    Column("raw", Text, nullable=False),
    Column("scale", Text),
    Column("note", Text, nullable=False),
    Column("labeler", Text, nullable=False),
    Column("created_at", Text, nullable=False),
    Column("judge_version", Text),
    Index("labels_item", "run_id", "case_id", "k"),
)

run_summaries = Table(
    "run_summaries",
    metadata,
    _run_id(),
    Column("status", Text, nullable=False),
    Column("summary", Text, nullable=False),
)
"""A run's summary as JSON (``ragjudge.sweep.digest`` writes and reads it) and the run status
it was computed at; dropped by any write to the run's rows or manifest."""

ROW_TABLES = (answers, judge_results, rankings, retrieval_metrics, cases, ledger)
"""The tables holding a run's rows, keyed by run (``counts``, ``store copy``)."""
