"""Assistants of a client's own over a served graph (the LangGraph SDK's ``assistants.create``),
each version kept, and the assistant a thread's latest run was started on.

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def _fields() -> list[sa.Column[object]]:
    return [
        sa.Column("graph", sa.String(64), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text, nullable=True),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("context", sa.JSON, nullable=False),
        sa.Column("metadata", sa.JSON, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "assistants",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        *_fields(),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_assistants_owner", "assistants", ["tenant", "user_id", "created_at"])
    op.create_table(
        "assistant_versions",
        sa.Column(
            "assistant_id",
            sa.String(36),
            sa.ForeignKey("assistants.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("version", sa.Integer, primary_key=True),
        *_fields(),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("assistant_id", sa.String(36), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("assistant_id")
    op.drop_table("assistant_versions")
    op.drop_index("ix_assistants_owner", "assistants")
    op.drop_table("assistants")
