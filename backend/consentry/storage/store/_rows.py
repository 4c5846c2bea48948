"""The Store's rows: a tenant's items read, written, refreshed and swept, in the caller's
transaction. Expired items are never read (``expires_at`` is checked on every read); the sweeper
deletes them later (:func:`delete_expired`).

A Store call is on a graph's hot path (``memory_flow``: a search and a put a conversation), so
its statements are built once and run ``direct`` (``storage.db.direct``), past SQLAlchemy's
execution: a get, a put, a delete and a refresh are one statement each. A namespace listing's
depends on its prefix (one or none: two statements, built at import), a search's on its shape
(a prefix or none, the kinds of the filter's conditions, a limit or none), built when first
asked for and held (:func:`_search`). A search with more than :data:`MOST_DIRECT_CONDITIONS`
conditions in SQL is built per call and runs through SQLAlchemy, so that whatever clients send,
the shapes held stay at most 140 for the database served. Built and run through SQLAlchemy at
each call, a search and a put cost 1.1–2.3 ms of CPU on SQLite and 2.6–3.7 on PostgreSQL; run
direct, 0.19–0.29 and 1.1–1.8 (``bench.store_calls``; ``docs/performance.md``,
"memory_flow")."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from consentry.storage.db.database import DbConnection, execute, execute_unread
from consentry.storage.db.dialect import INSERTS
from consentry.storage.db.direct import direct
from consentry.storage.metadata_filters import (
    BOUND_TYPES,
    MetadataKind,
    MetadataValue,
    metadata_bound,
    metadata_condition,
    metadata_kind,
)
from consentry.storage.tables import store_items

__all__ = [
    "MOST_DIRECT_CONDITIONS",
    "ItemRow",
    "candidates",
    "delete_expired",
    "delete_item",
    "get_item",
    "joined",
    "namespaces",
    "put_item",
    "refresh",
]

Namespace = tuple[str, ...]
MOST_DIRECT_CONDITIONS = 3
"""A search's most conditions in SQL for its statement to be held and run direct: its shapes are
then at most 35 for each database, prefix and limit (the kinds' combinations, in kind order)."""


@dataclass(frozen=True, slots=True)
class ItemRow:
    namespace: Namespace
    key: str
    value: dict[str, Any]
    vectors: list[list[float]] | None
    created_at: datetime
    updated_at: datetime
    ttl_minutes: float | None


_COLUMNS = (
    store_items.c.namespace,
    store_items.c.key,
    store_items.c.value,
    store_items.c.vectors,
    store_items.c.created_at,
    store_items.c.updated_at,
    # As the driver gives it, a float on both databases: SQLAlchemy's Float on psycopg converts
    # by the type the server names for the column, which a direct statement does not read.
    sa.type_coerce(store_items.c.ttl_minutes, sa.types.NullType()),
)
_ITEM = (
    store_items.c.tenant == sa.bindparam("p_tenant"),
    store_items.c.namespace == sa.bindparam("p_ns"),
    store_items.c.key == sa.bindparam("p_key"),
)
_LIVE = sa.and_(
    store_items.c.tenant == sa.bindparam("p_tenant"),
    sa.or_(store_items.c.expires_at.is_(None), store_items.c.expires_at > sa.bindparam("p_now")),
)
_UNDER = sa.or_(
    store_items.c.namespace == sa.bindparam("p_ns"),
    sa.and_(
        store_items.c.namespace > sa.bindparam("p_after"),
        store_items.c.namespace < sa.bindparam("p_before"),
    ),
)
"""The namespace is ``p_ns`` or below it: one range of the key (``tables._store``)."""


def joined(namespace: Namespace) -> str:
    """A namespace as stored: its labels joined with ``.`` (a label holds none)."""
    return ".".join(namespace)


def _row(row: Any) -> ItemRow:
    namespace, key, value, vectors, created_at, updated_at, ttl = row
    return ItemRow(tuple(namespace.split(".")), key, value, vectors, created_at, updated_at, ttl)


def _scope(tenant: str, prefix: Namespace, now: datetime) -> dict[str, Any]:
    """The parameters of :data:`_LIVE` and, for a prefix, :data:`_UNDER`."""
    parameters: dict[str, Any] = {"p_tenant": tenant, "p_now": now}
    if prefix:
        text = joined(prefix)
        parameters.update(p_ns=text, p_after=f"{text}.", p_before=f"{text}/")
    return parameters


_GET = direct(sa.select(*_COLUMNS).where(_LIVE, *_ITEM[1:]))


async def get_item(
    conn: DbConnection, tenant: str, namespace: Namespace, key: str, *, now: datetime
) -> ItemRow | None:
    """The tenant's live item at ``namespace`` and ``key``, if any."""
    parameters = {"p_tenant": tenant, "p_now": now, "p_ns": joined(namespace), "p_key": key}
    row = (await execute(conn, _GET, parameters)).first()
    return None if row is None else _row(row)


def _upsert(make_insert: Any) -> Any:
    """Store the item, or replace the one with its namespace and key: it keeps its
    ``created_at`` unless it had expired (replaced as new)."""
    statement = make_insert(store_items).values(
        tenant=sa.bindparam("p_tenant"),
        namespace=sa.bindparam("p_ns"),
        key=sa.bindparam("p_key"),
        value=sa.bindparam("p_value"),
        vectors=sa.bindparam("p_vectors"),
        created_at=sa.bindparam("p_now"),
        updated_at=sa.bindparam("p_now"),
        expires_at=sa.bindparam("p_expires"),
        ttl_minutes=sa.bindparam("p_ttl"),
    )
    new = statement.excluded
    expired = sa.and_(
        store_items.c.expires_at.is_not(None), store_items.c.expires_at <= new.updated_at
    )
    return direct(
        statement.on_conflict_do_update(
            index_elements=[store_items.c.tenant, store_items.c.namespace, store_items.c.key],
            set_={
                "value": new.value,
                "vectors": new.vectors,
                "created_at": sa.case((expired, new.created_at), else_=store_items.c.created_at),
                "updated_at": new.updated_at,
                "expires_at": new.expires_at,
                "ttl_minutes": new.ttl_minutes,
            },
        )
    )


_PUT = {dialect: _upsert(make_insert) for dialect, make_insert in INSERTS.items()}


async def put_item(
    conn: DbConnection,
    tenant: str,
    namespace: Namespace,
    key: str,
    *,
    value: Mapping[str, Any],
    vectors: list[list[float]] | None,
    ttl_minutes: float | None,
    now: datetime,
) -> None:
    """Store the item, or replace the one with its namespace and key (it keeps its
    ``created_at``; an expired one is replaced as new)."""
    parameters = {
        "p_tenant": tenant,
        "p_ns": joined(namespace),
        "p_key": key,
        "p_value": dict(value),
        "p_vectors": vectors,
        "p_now": now,
        "p_expires": None if ttl_minutes is None else now + timedelta(minutes=ttl_minutes),
        "p_ttl": ttl_minutes,
    }
    await execute_unread(conn, _PUT[conn.dialect.name], parameters)


_DELETE = direct(sa.delete(store_items).where(*_ITEM))


async def delete_item(conn: DbConnection, tenant: str, namespace: Namespace, key: str) -> None:
    parameters = {"p_tenant": tenant, "p_ns": joined(namespace), "p_key": key}
    await execute_unread(conn, _DELETE, parameters)


def _search_statement(
    dialect: str, prefixed: bool, kinds: tuple[MetadataKind, ...], limited: bool
) -> sa.Select[Any]:
    """A search's statement: under ``p_ns`` if ``prefixed``; the value's key ``p_key<n>`` holds
    ``p_value<n>``, of ``kinds[n]``; ``p_limit`` and ``p_offset`` if ``limited``."""
    query = sa.select(*_COLUMNS).where(_LIVE, _UNDER if prefixed else sa.true())
    for n, kind in enumerate(kinds):
        key = sa.bindparam(f"p_key{n}", type_=sa.String())
        value = sa.bindparam(f"p_value{n}", type_=BOUND_TYPES[kind])
        query = query.where(
            metadata_condition(store_items.c.value, dialect, kind, key=key, value=value)
        )
    query = query.order_by(
        store_items.c.updated_at.desc(), store_items.c.namespace, store_items.c.key
    )
    if limited:
        query = query.limit(sa.bindparam("p_limit", type_=sa.Integer())).offset(
            sa.bindparam("p_offset", type_=sa.Integer())
        )
    return query


@functools.cache
def _search(
    dialect: str, prefixed: bool, kinds: tuple[MetadataKind, ...], limited: bool
) -> sa.Select[Any]:
    """:func:`_search_statement`, built once for each shape and held, so run direct."""
    return direct(_search_statement(dialect, prefixed, kinds, limited))


async def candidates(
    conn: DbConnection,
    tenant: str,
    prefix: Namespace,
    *,
    equals: Mapping[str, MetadataValue],
    now: datetime,
    limit: int | None,
    offset: int,
) -> list[ItemRow]:
    """The tenant's live items under ``prefix`` whose value's top-level keys hold the scalars
    ``equals`` gives, most recently updated first (``limit`` None: all of them, for a search
    that filters or ranks them further)."""
    dialect = conn.dialect.name
    parameters = _scope(tenant, prefix, now)
    # In kind order, so that the order of a filter's keys makes no shape of its own.
    conditions = sorted(
        ((metadata_kind(wanted), name, wanted) for name, wanted in equals.items()),
        key=lambda condition: condition[0],
    )
    for n, (_, name, wanted) in enumerate(conditions):
        parameters[f"p_key{n}"], parameters[f"p_value{n}"] = metadata_bound(dialect, name, wanted)
    if limit is not None:
        parameters.update(p_limit=limit, p_offset=offset)
    kinds = tuple(kind for kind, _, _ in conditions)
    shape = (dialect, bool(prefix), kinds, limit is not None)
    query = _search(*shape) if len(kinds) <= MOST_DIRECT_CONDITIONS else _search_statement(*shape)
    return [_row(row) for row in await execute(conn, query, parameters)]


_REFRESH = direct(
    sa.update(store_items)
    .where(*_ITEM, store_items.c.updated_at == sa.bindparam("p_seen"))
    .values(expires_at=sa.bindparam("p_until"))
)


async def refresh(conn: DbConnection, tenant: str, items: Sequence[ItemRow], now: datetime) -> None:
    """Restart the time to live of each item that has one (a read that refreshes it), unless
    it was written since it was read (its new expiry stands). In key order, so that two
    refreshes of the same items never wait on each other in a circle."""
    expiring = sorted(
        {(item.namespace, item.key): item for item in items if item.ttl_minutes}.values(),
        key=lambda item: (joined(item.namespace), item.key),
    )
    if not expiring:
        return
    await execute_unread(
        conn,
        _REFRESH,
        [
            {
                "p_tenant": tenant,
                "p_ns": joined(item.namespace),
                "p_key": item.key,
                "p_seen": item.updated_at,
                "p_until": now + timedelta(minutes=item.ttl_minutes or 0),
            }
            for item in expiring
        ],
    )


_NAMESPACES = {
    prefixed: direct(
        sa.select(store_items.c.namespace)
        .where(_LIVE, _UNDER if prefixed else sa.true())
        .distinct()
        .order_by(store_items.c.namespace)
    )
    for prefixed in (False, True)
}


async def namespaces(
    conn: DbConnection, tenant: str, prefix: Namespace, *, now: datetime
) -> list[Namespace]:
    """Every namespace under ``prefix`` (all, for an empty one) that holds a live item of the
    tenant's, in order."""
    found = await execute(conn, _NAMESPACES[bool(prefix)], _scope(tenant, prefix, now))
    return [tuple(text.split(".")) for text in found.scalars()]


async def delete_expired(conn: DbConnection, *, now: datetime) -> int:
    """Delete every expired item (of every tenant); how many."""
    result = await conn.execute(
        sa.delete(store_items).where(
            store_items.c.expires_at.is_not(None), store_items.c.expires_at <= now
        )
    )
    return int(result.rowcount or 0)
