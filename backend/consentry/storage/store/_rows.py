"""The Store's rows: a tenant's items read, written, refreshed and swept, in the caller's
transaction. Expired items are never read (``expires_at`` is checked on every read); the sweeper
deletes them later (:func:`delete_expired`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from consentry.storage.db.database import DbConnection
from consentry.storage.db.dialect import insert
from consentry.storage.metadata_filters import MetadataValue, metadata_equals
from consentry.storage.tables import store_items

__all__ = [
    "ItemRow",
    "candidates",
    "delete_expired",
    "delete_item",
    "get_items",
    "joined",
    "namespaces",
    "put_item",
    "refresh",
]

Namespace = tuple[str, ...]


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
    store_items.c.ttl_minutes,
)


def joined(namespace: Namespace) -> str:
    """A namespace as stored: its labels joined with ``.`` (a label holds none)."""
    return ".".join(namespace)


def _row(row: Any) -> ItemRow:
    namespace, key, value, vectors, created_at, updated_at, ttl = row
    return ItemRow(tuple(namespace.split(".")), key, value, vectors, created_at, updated_at, ttl)


def _live(tenant: str, now: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(
        store_items.c.tenant == tenant,
        sa.or_(store_items.c.expires_at.is_(None), store_items.c.expires_at > now),
    )


def _under(prefix: Namespace) -> sa.ColumnElement[bool]:
    """The namespace is ``prefix`` or below it: one range of the key (``tables._store``)."""
    if not prefix:
        return sa.true()
    text = joined(prefix)
    column = store_items.c.namespace
    return sa.or_(column == text, sa.and_(column > f"{text}.", column < f"{text}/"))


async def get_items(
    conn: DbConnection, tenant: str, wanted: Iterable[tuple[Namespace, str]], *, now: datetime
) -> dict[tuple[Namespace, str], ItemRow]:
    """The tenant's live items among ``wanted`` (namespace, key), by namespace and key."""
    pairs = list(dict.fromkeys(wanted))
    if not pairs:
        return {}
    named = sa.or_(
        *(
            sa.and_(store_items.c.namespace == joined(ns), store_items.c.key == key)
            for ns, key in pairs
        )
    )
    rows = await conn.execute(sa.select(*_COLUMNS).where(_live(tenant, now), named))
    found = (_row(row) for row in rows)
    return {(item.namespace, item.key): item for item in found}


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
    expires_at = None if ttl_minutes is None else now + timedelta(minutes=ttl_minutes)
    statement = insert(conn, store_items).values(
        tenant=tenant,
        namespace=joined(namespace),
        key=key,
        value=dict(value),
        vectors=vectors,
        created_at=now,
        updated_at=now,
        expires_at=expires_at,
        ttl_minutes=ttl_minutes,
    )
    expired = sa.and_(store_items.c.expires_at.is_not(None), store_items.c.expires_at <= now)
    await conn.execute(
        statement.on_conflict_do_update(
            index_elements=[store_items.c.tenant, store_items.c.namespace, store_items.c.key],
            set_={
                "value": statement.excluded.value,
                "vectors": statement.excluded.vectors,
                "created_at": sa.case((expired, now), else_=store_items.c.created_at),
                "updated_at": now,
                "expires_at": expires_at,
                "ttl_minutes": ttl_minutes,
            },
        )
    )


async def delete_item(conn: DbConnection, tenant: str, namespace: Namespace, key: str) -> None:
    await conn.execute(
        sa.delete(store_items).where(
            store_items.c.tenant == tenant,
            store_items.c.namespace == joined(namespace),
            store_items.c.key == key,
        )
    )


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
    query = sa.select(*_COLUMNS).where(_live(tenant, now), _under(prefix))
    for name, wanted in equals.items():
        query = query.where(metadata_equals(store_items.c.value, conn.dialect.name, name, wanted))
    query = query.order_by(
        store_items.c.updated_at.desc(), store_items.c.namespace, store_items.c.key
    )
    if limit is not None:
        query = query.limit(limit).offset(offset)
    return [_row(row) for row in await conn.execute(query)]


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
    await conn.execute(
        sa.update(store_items)
        .where(
            store_items.c.tenant == tenant,
            store_items.c.namespace == sa.bindparam("ns"),
            store_items.c.key == sa.bindparam("k"),
            store_items.c.updated_at == sa.bindparam("seen"),
        )
        .values(expires_at=sa.bindparam("until")),
        [
            {
                "ns": joined(item.namespace),
                "k": item.key,
                "seen": item.updated_at,
                "until": now + timedelta(minutes=item.ttl_minutes or 0),
            }
            for item in expiring
        ],
    )


async def namespaces(
    conn: DbConnection, tenant: str, prefix: Namespace, *, now: datetime
) -> list[Namespace]:
    """Every namespace under ``prefix`` (all, for an empty one) that holds a live item of the
    tenant's, in order."""
    query = (
        sa.select(store_items.c.namespace)
        .where(_live(tenant, now), _under(prefix))
        .distinct()
        .order_by(store_items.c.namespace)
    )
    return [tuple(text.split(".")) for text in (await conn.execute(query)).scalars()]


async def delete_expired(conn: DbConnection, *, now: datetime) -> int:
    """Delete every expired item (of every tenant); how many."""
    result = await conn.execute(
        sa.delete(store_items).where(
            store_items.c.expires_at.is_not(None), store_items.c.expires_at <= now
        )
    )
    return int(result.rowcount or 0)
