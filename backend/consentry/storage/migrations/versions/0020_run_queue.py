"""Runs that wait for their thread's active run (the LangGraph SDK's
``multitask_strategy="enqueue"``): the request as sent, started in order once the thread is free.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_WAITING = sa.text("status = 'waiting'")


def upgrade() -> None:
    op.create_table(
        "run_queue",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("thread_id", sa.String(36), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_run_queue_thread", "run_queue", ["thread_id", "created_at"])
    op.create_index(
        "ix_run_queue_waiting",
        "run_queue",
        ["status"],
        sqlite_where=_WAITING,
        postgresql_where=_WAITING,
    )


def downgrade() -> None:
    op.drop_index("ix_run_queue_waiting", table_name="run_queue")
    op.drop_index("ix_run_queue_thread", table_name="run_queue")
    op.drop_table("run_queue")
