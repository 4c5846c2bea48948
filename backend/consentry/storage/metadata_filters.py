"""A client's metadata filter in SQL: a JSON column's ``key`` holds a value of the same JSON type
(text, number, boolean) and the same value, on SQLite and PostgreSQL alike. Used by the searches
of threads and assistants (the LangGraph SDK's ``metadata`` filters)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

__all__ = ["MetadataValue", "metadata_equals"]

MetadataValue = str | int | float | bool
"""A value a metadata search compares: a JSON scalar."""


def metadata_equals(
    column: sa.ColumnElement[Any], dialect: str, key: str, value: MetadataValue
) -> sa.ColumnElement[bool]:
    """``column``'s ``key`` holds ``value``: the same JSON type (text, number, boolean) and
    value. SQLite's ``json_type`` and ``json_extract``, PostgreSQL's ``json_typeof`` and ``->>``
    (a number compared as ``numeric`` only when it is one). Keys hold no ``"``
    (``schemas.sdk``)."""
    kind = "boolean" if isinstance(value, bool) else "text" if isinstance(value, str) else "number"
    if dialect == "postgresql":
        typeof = sa.func.json_typeof(column.op("->")(key))
        text = column.op("->>")(key)
        if kind == "boolean":
            return sa.and_(typeof == "boolean", text == ("true" if value else "false"))
        if kind == "text":
            return sa.and_(typeof == "string", text == value)
        return sa.case((typeof == "number", sa.cast(text, sa.Numeric) == value), else_=sa.false())
    path = f'$."{key}"'
    sqlite_type = sa.func.json_type(column, path)
    if kind == "boolean":
        return sqlite_type == ("true" if value else "false")
    extracted = sa.func.json_extract(column, path)
    if kind == "text":
        return sa.and_(sqlite_type == "text", extracted == value)
    return sa.and_(sqlite_type.in_(["integer", "real"]), extracted == value)
