"""What differs between SQLite and PostgreSQL statements, in one place: ``INSERT … ON CONFLICT``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from consentry.storage.db.database import DbConnection

__all__ = ["INSERTS", "insert"]

INSERTS: dict[str, Any] = {"postgresql": postgresql.insert, "sqlite": sqlite.insert}
"""Each database's ``INSERT`` construct, for statements built once per database at import."""


def insert(conn: DbConnection, table: sa.Table) -> Any:
    """An ``INSERT`` with ``on_conflict_do_nothing`` / ``on_conflict_do_update`` for the
    connection's database (both speak ``ON CONFLICT``)."""
    return INSERTS[conn.dialect.name](table)
