"""A thread keeps its client's metadata (the LangGraph SDK's ``metadata``: set when the thread
is created, merged by ``PATCH /threads/{id}``, searched by ``POST /threads/search``).

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("metadata", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("metadata")
