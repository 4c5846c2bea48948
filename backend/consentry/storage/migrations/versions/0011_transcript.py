"""The transcript: every message of a thread, kept apart from the graph's state, which keeps
only a window of them (``CONSENTRY_CONVERSATION_WINDOW``).

Threads from before have their messages in their checkpoint only (``transcript_kept`` false):
their next message copies them here first.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "transcript",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("thread_id", sa.String(36), nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["threads.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_transcript_thread", "transcript", ["thread_id", "id"])
    with op.batch_alter_table("threads") as batch:
        batch.add_column(
            sa.Column("transcript_kept", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("transcript_kept")
    op.drop_index("ix_transcript_thread", table_name="transcript")
    op.drop_table("transcript")
