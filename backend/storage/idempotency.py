"""Idempotency keys: the first request with a key, by owner, and what it produced."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from backend.principal import Principal
from backend.storage.database import DbConnection
from backend.storage.dialect import insert
from backend.storage.tables import idempotency_keys

__all__ = [
    "claim_idempotency_key",
    "complete_idempotency_key",
    "find_idempotency_key",
    "prune_idempotency_keys",
    "release_idempotency_key",
    "release_in_flight_keys",
]


def _key(owner: Principal, key: str) -> sa.ColumnElement[bool]:
    return sa.and_(
        idempotency_keys.c.tenant == owner.tenant,
        idempotency_keys.c.user_id == owner.user,
        idempotency_keys.c.key == key,
    )


async def find_idempotency_key(conn: DbConnection, owner: Principal, key: str) -> Any | None:
    return (await conn.execute(idempotency_keys.select().where(_key(owner, key)))).first()


async def claim_idempotency_key(
    conn: DbConnection, owner: Principal, key: str, *, request_hash: str, now: datetime
) -> bool:
    """Record the key as in flight; False when it exists already (one statement, so two
    requests racing with the same key get one True, on either database)."""
    result = await conn.execute(
        insert(conn, idempotency_keys)
        .values(
            tenant=owner.tenant,
            user_id=owner.user,
            key=key,
            request_hash=request_hash,
            status="in_flight",
            created_at=now,
        )
        .on_conflict_do_nothing()
        .returning(idempotency_keys.c.key)  # (an INSERT's row count is not reported everywhere)
    )
    return result.first() is not None


async def complete_idempotency_key(
    conn: DbConnection,
    owner: Principal,
    key: str,
    *,
    response_status: int,
    response_body: dict[str, Any] | None,
    thread_id: str | None,
    run_id: str | None,
) -> None:
    await conn.execute(
        idempotency_keys.update()
        .where(_key(owner, key))
        .values(
            status="done",
            response_status=response_status,
            response_body=response_body,
            thread_id=thread_id,
            run_id=run_id,
        )
    )


async def release_idempotency_key(conn: DbConnection, owner: Principal, key: str) -> None:
    """Forget a key whose request was refused: a retry runs it again."""
    await conn.execute(idempotency_keys.delete().where(_key(owner, key)))


async def release_in_flight_keys(conn: DbConnection) -> int:
    result = await conn.execute(
        idempotency_keys.delete().where(idempotency_keys.c.status == "in_flight")
    )
    return result.rowcount


async def prune_idempotency_keys(conn: DbConnection, *, older_than: datetime) -> int:
    result = await conn.execute(
        idempotency_keys.delete().where(idempotency_keys.c.created_at < older_than)
    )
    return result.rowcount
