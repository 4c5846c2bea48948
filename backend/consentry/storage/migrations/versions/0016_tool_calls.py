"""The tool calls of a thread, kept apart from the transcript (which keeps only what the user and
the assistant said): one row per tool call a model asked for, completed by its result
(``GET /v1/threads/{id}/tool-calls``).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_PENDING = sa.text("status = 'pending'")


def upgrade() -> None:
    op.create_table(
        "tool_calls",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("thread_id", sa.String(36), nullable=False),
        sa.Column("run_id", sa.String(36), nullable=False),
        sa.Column("tool_call_id", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("message_id", sa.String(255), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("content", sa.Text(), nullable=True),
        sa.Column("content_chars", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_tool_calls_thread", "tool_calls", ["thread_id", "id"])
    # A call waiting for its result, once per thread: what its result (and a call told again with
    # edited arguments) completes, with one INSERT ... ON CONFLICT.
    op.create_index(
        "ux_tool_calls_pending",
        "tool_calls",
        ["thread_id", "tool_call_id"],
        unique=True,
        sqlite_where=_PENDING,
        postgresql_where=_PENDING,
    )


def downgrade() -> None:
    op.drop_index("ux_tool_calls_pending", table_name="tool_calls")
    op.drop_index("ix_tool_calls_thread", table_name="tool_calls")
    op.drop_table("tool_calls")
