"""A run keeps its client's metadata (the LangGraph SDK's ``metadata`` on ``runs.stream``,
``runs.create`` and ``runs.wait``; read back by ``runs.get`` and ``runs.list``).

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("metadata", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("metadata")
