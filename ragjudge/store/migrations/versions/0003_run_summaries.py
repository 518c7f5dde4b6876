"""A run's summary, computed once when it ends (or on first read) and kept: the analysis the
``ui`` run page, history and runs list show (``ragjudge.sweep.digest``).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_summaries",
        sa.Column(
            "run_id",
            sa.Text,
            sa.ForeignKey("runs.run_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_summaries")
