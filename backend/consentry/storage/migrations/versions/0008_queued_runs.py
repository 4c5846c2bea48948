"""Queued runs: a run an API-only replica started waits, with its graph inputs, for a worker.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("inputs", sa.JSON(), nullable=True))
    op.create_index("ix_runs_status", "runs", ["status"])


def downgrade() -> None:
    op.drop_index("ix_runs_status", "runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("inputs")
