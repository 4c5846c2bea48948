"""Event retention: when each stored event was made, and how far a thread's log was pruned.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("events", sa.Column("created_at", sa.DateTime(timezone=True), nullable=True))
    op.create_index("ix_events_created", "events", ["created_at"])
    op.add_column(
        "threads", sa.Column("pruned_through", sa.Integer(), server_default="0", nullable=False)
    )


def downgrade() -> None:
    op.drop_column("threads", "pruned_through")
    op.drop_index("ix_events_created", "events")
    op.drop_column("events", "created_at")
