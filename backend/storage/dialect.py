"""What differs between SQLite and PostgreSQL statements, in one place: ``INSERT … ON CONFLICT``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

__all__ = ["insert"]


def insert(conn: AsyncConnection, table: sa.Table) -> Any:
    """An ``INSERT`` with ``on_conflict_do_nothing`` / ``on_conflict_do_update`` for the
    connection's database (both speak ``ON CONFLICT``)."""
    if conn.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)
