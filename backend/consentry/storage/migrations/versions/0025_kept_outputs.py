"""A run asked with ``stream_resumable`` keeps its graph outputs (LangGraph's ``values``,
``messages``... of the modes its stream asked) with the durable event after them, for a join to
replay; they are forgotten after ``CONSENTRY_RESUMABLE_STREAM_SECONDS`` (the partial index finds
them).

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

_KEPT = sa.text("outputs IS NOT NULL")


def upgrade() -> None:
    op.add_column("events", sa.Column("outputs", sa.Text, nullable=True))  # no rewrite of the log
    op.create_index(
        "ix_events_outputs", "events", ["created_at"], sqlite_where=_KEPT, postgresql_where=_KEPT
    )


def downgrade() -> None:
    op.drop_index("ix_events_outputs", "events")
    with op.batch_alter_table("events") as batch:
        batch.drop_column("outputs")
