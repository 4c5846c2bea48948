"""The Store's items (LangGraph's ``BaseStore``: cross-thread memory), each a tenant's."""

from __future__ import annotations

import sqlalchemy as sa

from consentry.storage.tables._columns import UTCDateTime, metadata

__all__ = ["NAMESPACE_TEXT", "store_items"]

NAMESPACE_TEXT = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
"""A namespace's labels joined with ``.`` (a label holds no ``.``), compared byte by byte on
both databases (SQLite's default; ``C`` on PostgreSQL), so that the items under a prefix are one
range of the primary key: ``"a.b"`` itself, then ``"a.b." <= namespace < "a.b/"``."""

_EXPIRING = sa.text("expires_at IS NOT NULL")

store_items = sa.Table(
    "store_items",
    metadata,
    sa.Column("tenant", sa.String(128), primary_key=True),
    sa.Column("namespace", NAMESPACE_TEXT, primary_key=True),
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", sa.JSON, nullable=False),
    # The embeddings of the item's indexed texts (semantic search); None: not indexed.
    sa.Column("vectors", sa.JSON, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("expires_at", UTCDateTime, nullable=True),
    sa.Column("ttl_minutes", sa.Float, nullable=True),
    sa.Index(
        "ix_store_items_expiry",
        "expires_at",
        sqlite_where=_EXPIRING,
        postgresql_where=_EXPIRING,
    ),
)
