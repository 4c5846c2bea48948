"""Crons (the LangGraph SDK's ``client.crons``): schedules of runs, each tick taken by one process
with a compare-and-set of ``next_run_at``.

Revision ID: 0028
Revises: 0027
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

_SCHEDULED = sa.text("next_run_at IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "crons",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("assistant_id", sa.String(64), nullable=False),
        sa.Column("thread_id", sa.String(36), nullable=True),
        sa.Column("schedule", sa.String(128), nullable=False),
        sa.Column("timezone", sa.String(64), nullable=True),
        sa.Column("end_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("on_run_completed", sa.String(8), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("next_run_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_run_id", sa.String(36), nullable=True),
        sa.Column("last_thread_id", sa.String(36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_crons_owner_created", "crons", ["tenant", "user_id", "created_at"])
    op.create_index(
        "ix_crons_due",
        "crons",
        ["next_run_at"],
        sqlite_where=_SCHEDULED,
        postgresql_where=_SCHEDULED,
    )


def downgrade() -> None:
    op.drop_index("ix_crons_due", "crons")
    op.drop_index("ix_crons_owner_created", "crons")
    op.drop_table("crons")
