"""The schema of ragjudge 0.1 (runs, tags, answers, judge results, rankings, retrieval metrics,
cases, ledger). A store written by that release already has these tables (its
``meta.schema_version`` is 1): only the missing ones are created.

Revision ID: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _run_fk() -> sa.Column:
    return sa.Column(
        "run_id", sa.Text, sa.ForeignKey("runs.run_id", ondelete="CASCADE"), primary_key=True
    )


def upgrade() -> None:
    have = set(sa.inspect(op.get_bind()).get_table_names())
    tables = {
        "meta": [
            sa.Column("key", sa.Text, primary_key=True),
            sa.Column("value", sa.Text, nullable=False),
        ],
        "runs": [
            sa.Column("run_id", sa.Text, primary_key=True),
            sa.Column("manifest", sa.Text, nullable=False),
            sa.Column("status", sa.Text, nullable=False),
            sa.Column("config_hash", sa.Text, nullable=False),
            sa.Column("dataset_hash", sa.Text, nullable=False),
            sa.Column("started_at", sa.Text, nullable=False),
            sa.Column("finished_at", sa.Text),
        ],
        "tags": [
            _run_fk(),
            sa.Column("tag", sa.Text, primary_key=True),
            sa.Column("value", sa.Text, nullable=False, server_default=""),
        ],
        "answers": [
            _run_fk(),
            sa.Column("case_id", sa.Text, primary_key=True),
            sa.Column("k", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("answer", sa.Text, nullable=False),
        ],
        "judge_results": [
            _run_fk(),
            sa.Column("case_id", sa.Text, primary_key=True),
            sa.Column("k", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("judge", sa.Text, primary_key=True),
            sa.Column("status", sa.Text, nullable=False),
            sa.Column("score", sa.Double),
            sa.Column("result", sa.Text, nullable=False),
        ],
        "rankings": [
            _run_fk(),
            sa.Column("case_id", sa.Text, primary_key=True),
            sa.Column("ranking", sa.Text, nullable=False),
        ],
        "retrieval_metrics": [
            _run_fk(),
            sa.Column("case_id", sa.Text, primary_key=True),
            sa.Column("k", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("metric", sa.Text, primary_key=True),
            sa.Column("value", sa.Double, nullable=False),
        ],
        "cases": [
            _run_fk(),
            sa.Column("case_id", sa.Text, primary_key=True),
            sa.Column("testcase", sa.Text, nullable=False),
        ],
        "ledger": [
            _run_fk(),
            sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("entry", sa.Text, nullable=False),
        ],
    }
    for name, columns in tables.items():
        if name not in have:
            op.create_table(name, *columns)


def downgrade() -> None:
    raise NotImplementedError("the first schema has no earlier version")
