"""Human labels as rows: one per (labeler, run, case, k, judge) judgement, several per item.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "labels",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "run_id", sa.Text, sa.ForeignKey("runs.run_id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("case_id", sa.Text, nullable=False),
        sa.Column("k", sa.Integer, nullable=False),
        sa.Column("judge", sa.Text, nullable=False),
        sa.Column("value", sa.Double, nullable=False),
        sa.Column("raw", sa.Text, nullable=False),
        sa.Column("scale", sa.Text),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("labeler", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("judge_version", sa.Text),
    )
    op.create_index("labels_item", "labels", ["run_id", "case_id", "k"])


def downgrade() -> None:
    op.drop_index("labels_item", table_name="labels")
    op.drop_table("labels")
