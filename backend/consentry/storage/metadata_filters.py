"""A client's metadata filter in SQL: a JSON column's ``key`` holds a value of the same JSON type
(text, number, boolean) and the same value, on SQLite and PostgreSQL alike. Used by the searches
of threads, assistants and crons (the LangGraph SDK's ``metadata`` filters) and the Store's.

:func:`metadata_equals` is the condition for one key and value. A statement built once for
conditions of given kinds (the Store's searches, run ``direct``) takes :func:`metadata_condition`
with its own bind parameters, typed :data:`BOUND_TYPES`, and binds :func:`metadata_bound`'s
values to them."""

from __future__ import annotations

from typing import Any, Literal

import sqlalchemy as sa

__all__ = [
    "BOUND_TYPES",
    "MetadataKind",
    "MetadataValue",
    "metadata_bound",
    "metadata_condition",
    "metadata_equals",
    "metadata_kind",
]

MetadataValue = str | int | float | bool
"""A value a metadata search compares: a JSON scalar."""
MetadataKind = Literal["boolean", "text", "integer", "float"]
"""What a condition's SQL depends on of its value (a number's bind type: an integer or not)."""

BOUND_TYPES: dict[MetadataKind, sa.types.TypeEngine[Any]] = {
    "boolean": sa.String(),  # JSON's text of it
    "text": sa.String(),
    "integer": sa.BigInteger(),  # any a filter takes (``schemas.sdk``: 64 bits)
    "float": sa.Float(),
}
"""The type of the value :func:`metadata_bound` gives for each kind."""


def metadata_kind(value: MetadataValue) -> MetadataKind:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "text"
    return "integer" if isinstance(value, int) else "float"


def metadata_bound(dialect: str, key: str, value: MetadataValue) -> tuple[str, MetadataValue]:
    """What a condition binds: the key as the database names it (SQLite: a JSON path) and the
    value (a boolean: JSON's text of it)."""
    bound: MetadataValue = ("true" if value else "false") if isinstance(value, bool) else value
    return (f'$."{key}"' if dialect == "sqlite" else key), bound


def metadata_equals(
    column: sa.ColumnElement[Any], dialect: str, key: str, value: MetadataValue
) -> sa.ColumnElement[bool]:
    """``column``'s ``key`` holds ``value``: the same JSON type (text, number, boolean) and
    value. Keys hold no ``"`` (``schemas.sdk``)."""
    kind = metadata_kind(value)
    bound_key, bound_value = metadata_bound(dialect, key, value)
    return metadata_condition(
        column,
        dialect,
        kind,
        key=sa.literal(bound_key, sa.String()),
        value=sa.literal(bound_value, BOUND_TYPES[kind]),
    )


def metadata_condition(
    column: sa.ColumnElement[Any],
    dialect: str,
    kind: MetadataKind,
    *,
    key: sa.ColumnElement[str],
    value: sa.ColumnElement[Any],
) -> sa.ColumnElement[bool]:
    """``column``'s key holds a value of ``kind`` equal to ``value`` (``key`` and ``value``:
    what :func:`metadata_bound` gives). SQLite's ``json_type`` and ``json_extract``, PostgreSQL's
    ``json_typeof`` and ``->>`` (a number compared as ``numeric`` only when it is one)."""
    if dialect == "postgresql":
        typeof = sa.func.json_typeof(column.op("->")(key))
        text = column.op("->>")(key)
        if kind == "boolean":
            return sa.and_(typeof == "boolean", text == value)
        if kind == "text":
            return sa.and_(typeof == "string", text == value)
        return sa.case((typeof == "number", sa.cast(text, sa.Numeric) == value), else_=sa.false())
    sqlite_type = sa.func.json_type(column, key)
    if kind == "boolean":
        return sqlite_type == value
    extracted = sa.func.json_extract(column, key)
    if kind == "text":
        return sa.and_(sqlite_type == "text", extracted == value)
    # Each type its own bound value, not an expanding IN: a statement built once runs direct.
    number = sqlite_type.in_([sa.literal("integer"), sa.literal("real")])
    return sa.and_(number, extracted == value)
