"""Idempotency keys: the first request with a key, by owner, and what it produced.

A key is ``in_flight`` while its request runs, held by one attempt (a random id); the run the
request claims completes the key in the claim's own transaction, by compare-and-set on that
attempt (``complete_idempotency_key``). So a key either names its run or no run was claimed.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.storage.db.database import DbConnection, execute
from consentry.storage.db.dialect import INSERTS
from consentry.storage.db.direct import direct
from consentry.storage.tables import idempotency_keys

__all__ = [
    "IdempotencyKeyRecord",
    "KeyStatus",
    "claim_idempotency_key",
    "complete_idempotency_key",
    "find_idempotency_key",
    "prune_idempotency_keys",
    "release_idempotency_key",
    "release_in_flight_keys",
    "take_over_idempotency_key",
]


KeyStatus = Literal["in_flight", "done"]


@dataclass(frozen=True, slots=True)
class IdempotencyKeyRecord:
    """An idempotency key's row, as stored (``tables.idempotency_keys``)."""

    tenant: str
    user_id: str
    key: str
    request_hash: str
    status: KeyStatus
    attempt: str
    """The request holding an ``in_flight`` key."""
    response_status: int | None
    """What the request produced (with the three below), once ``done``."""
    response_body: dict[str, Any] | None
    thread_id: str | None
    run_id: str | None
    created_at: datetime


_COLUMNS = tuple(idempotency_keys.c[field.name] for field in fields(IdempotencyKeyRecord))
"""The columns of an :class:`IdempotencyKeyRecord`, in its fields' order (``Record(*row)``)."""


def _key(owner: Principal, key: str) -> sa.ColumnElement[bool]:
    return sa.and_(
        idempotency_keys.c.tenant == owner.tenant,
        idempotency_keys.c.user_id == owner.user,
        idempotency_keys.c.key == key,
    )


def _held(owner: Principal, key: str, attempt: str) -> sa.ColumnElement[bool]:
    return sa.and_(
        _key(owner, key),
        idempotency_keys.c.status == "in_flight",
        idempotency_keys.c.attempt == attempt,
    )


# A request's claim and completion are on the path of every run with a key: built once.
_CLAIM = {
    dialect: direct(
        make_insert(idempotency_keys)
        .values(
            tenant=sa.bindparam("p_tenant"),
            user_id=sa.bindparam("p_user"),
            key=sa.bindparam("p_key"),
            request_hash=sa.bindparam("p_hash"),
            status="in_flight",
            attempt=sa.bindparam("p_attempt"),
            created_at=sa.bindparam("p_now"),
        )
        .on_conflict_do_nothing()
        .returning(idempotency_keys.c.key)  # (an INSERT's row count is not reported everywhere)
    )
    for dialect, make_insert in INSERTS.items()
}
_COMPLETE = direct(
    idempotency_keys.update()
    .where(
        idempotency_keys.c.tenant == sa.bindparam("p_tenant"),
        idempotency_keys.c.user_id == sa.bindparam("p_user"),
        idempotency_keys.c.key == sa.bindparam("p_key"),
        idempotency_keys.c.status == "in_flight",
        idempotency_keys.c.attempt == sa.bindparam("p_attempt"),
    )
    .values(
        status="done",
        response_status=sa.bindparam("p_status"),
        response_body=sa.bindparam("p_body"),
        thread_id=sa.bindparam("p_thread"),
        run_id=sa.bindparam("p_run"),
    )
)


async def find_idempotency_key(
    conn: DbConnection, owner: Principal, key: str
) -> IdempotencyKeyRecord | None:
    row = (await conn.execute(sa.select(*_COLUMNS).where(_key(owner, key)))).first()
    return None if row is None else IdempotencyKeyRecord(*row)


async def claim_idempotency_key(
    conn: DbConnection,
    owner: Principal,
    key: str,
    *,
    request_hash: str,
    attempt: str,
    now: datetime,
) -> bool:
    """Record the key as in flight, held by ``attempt``; False when it exists already (one
    statement, so two requests racing with the same key get one True, on either database)."""
    parameters = {
        "p_tenant": owner.tenant,
        "p_user": owner.user,
        "p_key": key,
        "p_hash": request_hash,
        "p_attempt": attempt,
        "p_now": now,
    }
    result = await execute(conn, _CLAIM[conn.dialect.name], parameters)
    return result.first() is not None


async def take_over_idempotency_key(
    conn: DbConnection,
    owner: Principal,
    key: str,
    *,
    stale_attempt: str,
    attempt: str,
    now: datetime,
) -> bool:
    """Hold an in-flight key whose attempt stopped before claiming a run (its process died);
    False when another request took it first or it was completed meanwhile."""
    result = await conn.execute(
        idempotency_keys.update()
        .where(_held(owner, key, stale_attempt))
        .values(attempt=attempt, created_at=now)
    )
    return result.rowcount == 1


async def complete_idempotency_key(
    conn: DbConnection,
    owner: Principal,
    key: str,
    *,
    attempt: str,
    response_status: int,
    response_body: dict[str, Any] | None,
    thread_id: str | None,
    run_id: str | None,
) -> bool:
    """Store what the request produced, if ``attempt`` still holds the key (else False: the
    caller's transaction must roll back, another attempt owns the key now)."""
    parameters = {
        "p_tenant": owner.tenant,
        "p_user": owner.user,
        "p_key": key,
        "p_attempt": attempt,
        "p_status": response_status,
        "p_body": response_body,
        "p_thread": thread_id,
        "p_run": run_id,
    }
    result = await execute(conn, _COMPLETE, parameters)
    return result.rowcount == 1


async def release_idempotency_key(
    conn: DbConnection, owner: Principal, key: str, *, attempt: str
) -> None:
    """Forget a key whose request was refused before it claimed anything: a retry runs it
    again. A key completed meanwhile, or held by another attempt, stays."""
    await conn.execute(idempotency_keys.delete().where(_held(owner, key, attempt)))


async def release_in_flight_keys(conn: DbConnection) -> int:
    """Forget every in-flight key (at start-up, when no other process can hold one)."""
    result = await conn.execute(
        idempotency_keys.delete().where(idempotency_keys.c.status == "in_flight")
    )
    return result.rowcount


async def prune_idempotency_keys(conn: DbConnection, *, older_than: datetime) -> int:
    result = await conn.execute(
        idempotency_keys.delete().where(idempotency_keys.c.created_at < older_than)
    )
    return result.rowcount
