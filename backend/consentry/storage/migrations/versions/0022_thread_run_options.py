"""A thread keeps the options its client's last run gave (the graph's own runtime ``context`` and
``configurable`` values): a run nobody sends options with (a decision from the inbox, an expiry,
a recovery) runs with them.

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("run_options", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("run_options")
