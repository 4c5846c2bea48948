"""Crons (``tables.crons``): an owner's schedules of runs.

A tick is taken by the process whose compare-and-set moves ``next_run_at`` on from the due time
it read (:func:`take_tick`), in the transaction that queues the tick's run: of the replicas that
wake for it, one queues the run, the others find the tick gone. Every change to a cron notifies
:data:`CRONS_CHANNEL` at its commit, so that every process's scheduler plans its next wake-up
again (``runtime.crons``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from consentry.errors import NotFoundError
from consentry.principal import Principal
from consentry.storage.db.database import DbConnection, notify_at_commit
from consentry.storage.metadata_filters import MetadataValue, metadata_equals
from consentry.storage.tables import crons, run_queue

__all__ = [
    "CRONS_CHANNEL",
    "CronOrder",
    "CronRecord",
    "add_cron",
    "count_crons",
    "delete_cron",
    "due_crons",
    "get_cron",
    "next_due_at",
    "search_crons",
    "set_last_run",
    "take_tick",
    "update_cron",
    "waiting_cron_runs",
]

CRONS_CHANNEL = "consentry_crons"
"""Notified (empty payload) when a cron is created, changed or deleted."""

CronOrder = Literal[
    "cron_id", "assistant_id", "thread_id", "created_at", "updated_at", "next_run_date", "end_time"
]


@dataclass(frozen=True, slots=True)
class CronRecord:
    """A row of ``tables.crons``."""

    id: str
    tenant: str
    user_id: str
    assistant_id: str
    thread_id: str | None
    schedule: str
    timezone: str | None
    end_time: datetime | None
    payload: dict[str, Any]
    metadata: dict[str, Any] | None
    on_run_completed: str | None
    enabled: bool
    next_run_at: datetime | None
    last_run_id: str | None
    last_thread_id: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def owner(self) -> Principal:
        return Principal(self.tenant, self.user_id)


_COLUMNS = tuple(crons.c[field.name] for field in fields(CronRecord))
_ORDER = {
    "cron_id": crons.c.id,
    "assistant_id": crons.c.assistant_id,
    "thread_id": crons.c.thread_id,
    "created_at": crons.c.created_at,
    "updated_at": crons.c.updated_at,
    "next_run_date": crons.c.next_run_at,
    "end_time": crons.c.end_time,
}


def _cron_not_found(cron_id: str) -> NotFoundError:
    return NotFoundError(
        f"No cron {cron_id!r}.", code="cron_not_found", details={"cron_id": cron_id}
    )


async def add_cron(conn: DbConnection, owner: Principal, record: Mapping[str, Any]) -> None:
    """Store a new cron of the owner (``record``: its columns but the owner's)."""
    await conn.execute(crons.insert().values(**record, tenant=owner.tenant, user_id=owner.user))
    await notify_at_commit(conn, CRONS_CHANNEL, "")


async def get_cron(conn: DbConnection, owner: Principal, cron_id: str) -> CronRecord:
    """The owner's cron (``cron_not_found`` for another's, as for none)."""
    query = sa.select(*_COLUMNS).where(*_owned(owner), crons.c.id == cron_id)
    row = (await conn.execute(query)).first()
    if row is None:
        raise _cron_not_found(cron_id)
    return CronRecord(*row)


async def search_crons(
    conn: DbConnection,
    owner: Principal,
    *,
    assistant_id: str | None,
    thread_id: str | None,
    enabled: bool | None,
    metadata: Mapping[str, MetadataValue],
    limit: int,
    offset: int,
    order_by: CronOrder,
    descending: bool,
) -> list[CronRecord]:
    column = _ORDER[order_by]
    query = (
        _matching(conn, owner, assistant_id, thread_id, enabled, metadata)
        .order_by(column.desc() if descending else column.asc(), crons.c.id)
        .limit(limit)
        .offset(offset)
    )
    return [CronRecord(*row) for row in await conn.execute(query)]


async def count_crons(
    conn: DbConnection,
    owner: Principal,
    *,
    assistant_id: str | None,
    thread_id: str | None,
    metadata: Mapping[str, MetadataValue],
) -> int:
    query = _matching(conn, owner, assistant_id, thread_id, None, metadata)
    result = await conn.execute(sa.select(sa.func.count()).select_from(query.subquery()))
    return int(result.scalar_one())


async def update_cron(
    conn: DbConnection, owner: Principal, cron_id: str, values: Mapping[str, Any]
) -> None:
    """Change the owner's cron (``cron_not_found`` when there is none)."""
    statement = crons.update().where(*_owned(owner), crons.c.id == cron_id).values(**values)
    if (await conn.execute(statement)).rowcount != 1:
        raise _cron_not_found(cron_id)
    await notify_at_commit(conn, CRONS_CHANNEL, "")


async def delete_cron(conn: DbConnection, owner: Principal, cron_id: str) -> None:
    """Delete the owner's cron (``cron_not_found`` when there is none). A run it started goes
    on; a tick it has not taken is never taken."""
    statement = crons.delete().where(*_owned(owner), crons.c.id == cron_id)
    if (await conn.execute(statement)).rowcount != 1:
        raise _cron_not_found(cron_id)
    await notify_at_commit(conn, CRONS_CHANNEL, "")


async def next_due_at(conn: DbConnection) -> datetime | None:
    """When the earliest tick of any cron is due (None: no cron has one)."""
    query = sa.select(sa.func.min(crons.c.next_run_at)).where(crons.c.next_run_at.is_not(None))
    due: datetime | None = (await conn.execute(query)).scalar_one()
    return due


async def due_crons(
    conn: DbConnection, *, now: datetime, after: tuple[datetime, str] | None, limit: int
) -> list[CronRecord]:
    """The crons whose tick is due by ``now``, the earliest first, from after ``after`` (the
    due time and id of the last one of the previous batch)."""
    query = sa.select(*_COLUMNS).where(crons.c.next_run_at.is_not(None), crons.c.next_run_at <= now)
    if after is not None:
        query = query.where(sa.tuple_(crons.c.next_run_at, crons.c.id) > sa.tuple_(*after))
    query = query.order_by(crons.c.next_run_at, crons.c.id).limit(limit)
    return [CronRecord(*row) for row in await conn.execute(query)]


async def take_tick(
    conn: DbConnection,
    cron: CronRecord,
    *,
    next_run_at: datetime | None,
) -> bool:
    """Take the cron's tick due at its ``next_run_at``, moving it on to ``next_run_at``; False
    when it is not due then any more, or the cron changed since it was read (another process
    took the tick; a client changed or deleted the cron): the caller does nothing then."""
    statement = (
        crons.update()
        .where(
            crons.c.id == cron.id,
            crons.c.next_run_at == cron.next_run_at,
            crons.c.updated_at == cron.updated_at,
        )
        .values(next_run_at=next_run_at)
    )
    return (await conn.execute(statement)).rowcount == 1


async def set_last_run(conn: DbConnection, cron_id: str, *, run_id: str, thread_id: str) -> None:
    """The run (and its thread) the cron's latest tick queued."""
    statement = (
        crons.update()
        .where(crons.c.id == cron_id)
        .values(last_run_id=run_id, last_thread_id=thread_id)
    )
    await conn.execute(statement)


async def waiting_cron_runs(conn: DbConnection, *, queued_before: datetime) -> list[str]:
    """The threads of crons' latest runs still waiting in their run queue, queued before
    ``queued_before`` (the process that queued one stopped before starting it)."""
    query = (
        sa.select(run_queue.c.thread_id)
        .join(crons, crons.c.last_run_id == run_queue.c.id)
        .where(run_queue.c.status == "waiting", run_queue.c.created_at < queued_before)
        .distinct()
    )
    return [thread_id for (thread_id,) in await conn.execute(query)]


def _owned(owner: Principal) -> tuple[sa.ColumnElement[bool], ...]:
    return (crons.c.tenant == owner.tenant, crons.c.user_id == owner.user)


def _matching(
    conn: DbConnection,
    owner: Principal,
    assistant_id: str | None,
    thread_id: str | None,
    enabled: bool | None,
    metadata: Mapping[str, MetadataValue],
) -> sa.Select[Any]:
    query = sa.select(*_COLUMNS).where(*_owned(owner))
    if assistant_id is not None:
        query = query.where(crons.c.assistant_id == assistant_id)
    if thread_id is not None:
        query = query.where(crons.c.thread_id == thread_id)
    if enabled is not None:
        query = query.where(crons.c.enabled == enabled)
    for key, value in metadata.items():
        query = query.where(metadata_equals(crons.c.metadata, conn.dialect.name, key, value))
    return query
