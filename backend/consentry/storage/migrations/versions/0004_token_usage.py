"""Token usage per thread and per tenant (for token budgets).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "threads", sa.Column("tokens_used", sa.Integer(), server_default="0", nullable=False)
    )
    op.create_table(
        "tenant_usage",
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("tokens_used", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tenant"),
    )


def downgrade() -> None:
    op.drop_table("tenant_usage")
    op.drop_column("threads", "tokens_used")
