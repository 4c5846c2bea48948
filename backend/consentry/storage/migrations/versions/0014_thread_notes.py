"""A thread remembers the note it is about (the note its first message named): a note's
conversations are listed from the server, whatever browser asks (``GET /v1/threads?note_id=``).

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("note_id", sa.String(36), nullable=True))
    op.create_index(
        "ix_threads_owner_note", "threads", ["tenant", "user_id", "note_id", "updated_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_threads_owner_note", "threads")
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("note_id")
