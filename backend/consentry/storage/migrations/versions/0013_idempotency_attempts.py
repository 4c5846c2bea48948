"""Idempotency keys name the attempt that holds them: the run a keyed request claims completes its
key in the claim's own transaction by compare-and-set on that attempt, and a retry may take over a
key whose attempt stopped before claiming anything.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("idempotency_keys") as batch:
        batch.add_column(sa.Column("attempt", sa.String(32), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("idempotency_keys") as batch:
        batch.drop_column("attempt")
