"""A partial index of running threads by tenant: the count behind
``CONSENTRY_MAX_ACTIVE_RUNS_PER_TENANT``, taken at each run start, reads only the tenant's active
runs.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_threads_running_tenant",
        "threads",
        ["tenant"],
        sqlite_where=sa.text("status = 'running'"),
        postgresql_where=sa.text("status = 'running'"),
    )


def downgrade() -> None:
    op.drop_index("ix_threads_running_tenant", "threads")
