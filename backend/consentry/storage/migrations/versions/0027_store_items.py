"""The Store (LangGraph's ``BaseStore``, the SDK's ``/store`` routes): a tenant's items by
namespace and key, with their embeddings for semantic search and their expiry.

Revision ID: 0027
Revises: 0026
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_EXPIRING = sa.text("expires_at IS NOT NULL")


def upgrade() -> None:
    op.create_table(
        "store_items",
        sa.Column("tenant", sa.String(128), primary_key=True),
        sa.Column(
            "namespace",
            sa.Text().with_variant(sa.Text(collation="C"), "postgresql"),
            primary_key=True,
        ),
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("value", sa.JSON, nullable=False),
        sa.Column("vectors", sa.JSON, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ttl_minutes", sa.Float, nullable=True),
    )
    op.create_index(
        "ix_store_items_expiry",
        "store_items",
        ["expires_at"],
        sqlite_where=_EXPIRING,
        postgresql_where=_EXPIRING,
    )


def downgrade() -> None:
    op.drop_index("ix_store_items_expiry", "store_items")
    op.drop_table("store_items")
