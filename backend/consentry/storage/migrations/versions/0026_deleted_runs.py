"""A run deleted on the LangGraph SDK face (``runs.delete``, a rollback) is marked, not dropped:
the SDK no longer shows it, and the thread's events, audit trail and consents still name it.

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("deleted_at")
