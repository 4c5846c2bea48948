"""Run leases: which process holds a thread's active run, until when, under which fencing token.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("lease_owner", sa.String(64), nullable=True))
        batch.add_column(sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(
            sa.Column("fencing_token", sa.Integer(), server_default="0", nullable=False)
        )
    op.create_index("ix_threads_lease", "threads", ["status", "lease_expires_at"])


def downgrade() -> None:
    op.drop_index("ix_threads_lease", "threads")
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("fencing_token")
        batch.drop_column("lease_expires_at")
        batch.drop_column("lease_owner")
