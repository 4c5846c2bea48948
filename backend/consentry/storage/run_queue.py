"""The run queue: runs asked to wait for their thread's active run (the LangGraph SDK's
``multitask_strategy="enqueue"``), one row each, started oldest first.

A row is ``waiting`` until a process starts it (``started``, in the transaction that claims the
thread: the run takes the row's id), the start is refused (``refused``, with the error's code and
message) or a client cancels it (``cancelled``). Rows stay as the runs' record of what was asked.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal, cast

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.storage.db.database import DbConnection
from consentry.storage.tables import run_queue, threads

__all__ = [
    "QueueStatus",
    "QueuedRun",
    "add_queued_run",
    "cancel_queued_run",
    "delete_unstarted_run",
    "next_queued_run",
    "owner_runs",
    "queued_run",
    "queued_runs",
    "refuse_queued_run",
    "take_queued_run",
    "threads_with_queued_runs",
]

QueueStatus = Literal["waiting", "started", "refused", "cancelled", "deleted"]
"""``deleted``: a run that never started (refused, or cancelled while it waited) deleted on the
SDK face (``runs.delete``, a rollback): kept as a row, so that a request waiting for it in any
process learns its end, and shown nowhere."""


@dataclass(frozen=True, slots=True)
class QueuedRun:
    """A row of ``tables.run_queue``."""

    id: str
    thread_id: str
    tenant: str
    user_id: str
    request: dict[str, Any]
    """The run request as the client sent it (the SDK's ``RunCreate``, as JSON)."""
    status: QueueStatus
    error_code: str | None
    error_message: str | None
    metadata: dict[str, Any] | None
    created_at: datetime
    updated_at: datetime

    @property
    def owner(self) -> Principal:
        return Principal(self.tenant, self.user_id)


_COLUMNS = tuple(run_queue.c[field.name] for field in fields(QueuedRun))


async def add_queued_run(
    conn: DbConnection,
    owner: Principal,
    *,
    run_id: str,
    thread_id: str,
    request: dict[str, Any],
    metadata: dict[str, Any] | None,
    now: datetime,
    due_at: datetime | None = None,
) -> None:
    """Queue a run, due at once or at ``due_at`` (the SDK's ``after_seconds``), which is its
    ``created_at``, as on the Agent Server: the queue takes its runs in that order."""
    await conn.execute(
        run_queue.insert().values(
            id=run_id,
            thread_id=thread_id,
            tenant=owner.tenant,
            user_id=owner.user,
            request=request,
            status="waiting",
            metadata=metadata,
            created_at=due_at or now,
            updated_at=now,
        )
    )


async def next_queued_run(
    conn: DbConnection, thread_id: str, *, due_by: datetime | None = None
) -> QueuedRun | None:
    """The thread's waiting run due first (with ``due_by``: only one due by then)."""
    query = sa.select(*_COLUMNS).where(
        run_queue.c.thread_id == thread_id, run_queue.c.status == "waiting"
    )
    if due_by is not None:
        query = query.where(run_queue.c.created_at <= due_by)
    query = query.order_by(run_queue.c.created_at, run_queue.c.id).limit(1)
    row = (await conn.execute(query)).first()
    return None if row is None else QueuedRun(*row)


async def queued_run(conn: DbConnection, thread_id: str, run_id: str) -> QueuedRun | None:
    query = sa.select(*_COLUMNS).where(run_queue.c.thread_id == thread_id, run_queue.c.id == run_id)
    row = (await conn.execute(query)).first()
    return None if row is None else QueuedRun(*row)


async def queued_runs(
    conn: DbConnection, thread_id: str, *, statuses: tuple[QueueStatus, ...]
) -> list[QueuedRun]:
    """The thread's queued runs in these states, newest first."""
    query = (
        sa.select(*_COLUMNS)
        .where(run_queue.c.thread_id == thread_id, run_queue.c.status.in_(statuses))
        .order_by(run_queue.c.created_at.desc(), run_queue.c.id)
    )
    return [QueuedRun(*row) for row in await conn.execute(query)]


async def owner_runs(
    conn: DbConnection, owner: Principal, *, thread_id: str | None, waiting: bool, running: bool
) -> list[tuple[str, str, bool]]:
    """The owner's runs that wait in a thread's queue (``waiting``) and the active ones
    (``running``), of ``thread_id`` or of all the owner's threads: ``(thread_id, run_id,
    queued)``, the queued first."""
    owned = [threads.c.tenant == owner.tenant, threads.c.user_id == owner.user]
    if thread_id is not None:
        owned.append(threads.c.id == thread_id)
    found: list[tuple[str, str, bool]] = []
    if waiting:
        query = (
            sa.select(run_queue.c.thread_id, run_queue.c.id)
            .join(threads, threads.c.id == run_queue.c.thread_id)
            .where(run_queue.c.status == "waiting", *owned)
            .order_by(run_queue.c.created_at, run_queue.c.id)
        )
        queued = cast(list[tuple[str, str]], (await conn.execute(query)).all())
        found += [(thread, run, True) for thread, run in queued]
    if running:
        active = sa.select(threads.c.id, threads.c.active_run_id).where(
            threads.c.status == "running", threads.c.active_run_id.is_not(None), *owned
        )
        running_now = cast(list[tuple[str, str]], (await conn.execute(active)).all())
        found += [(thread, run, False) for thread, run in running_now]
    return found


async def threads_with_queued_runs(conn: DbConnection) -> list[str]:
    query = sa.select(run_queue.c.thread_id).where(run_queue.c.status == "waiting").distinct()
    return [thread_id for (thread_id,) in await conn.execute(query)]


async def take_queued_run(conn: DbConnection, run_id: str, *, now: datetime) -> bool:
    """Mark a waiting run started (in the transaction that claims its thread); False when it is
    not waiting any more (another process started it, or a client cancelled it)."""
    return await _settle(conn, run_id, "started", now=now)


async def refuse_queued_run(
    conn: DbConnection, run_id: str, *, code: str, message: str, now: datetime
) -> bool:
    """Record why a waiting run could not start."""
    return await _settle(conn, run_id, "refused", now=now, error_code=code, error_message=message)


async def cancel_queued_run(conn: DbConnection, run_id: str, *, now: datetime) -> bool:
    return await _settle(conn, run_id, "cancelled", now=now)


async def delete_unstarted_run(
    conn: DbConnection, thread_id: str, run_id: str, *, now: datetime
) -> bool:
    """Mark the thread's queued run that never started and waits no more (refused or
    cancelled) ``deleted``. False when there is none such."""
    statement = (
        run_queue.update()
        .where(
            run_queue.c.thread_id == thread_id,
            run_queue.c.id == run_id,
            run_queue.c.status.in_(("refused", "cancelled")),
        )
        .values(status="deleted", updated_at=now)
    )
    return (await conn.execute(statement)).rowcount == 1


async def _settle(
    conn: DbConnection, run_id: str, status: QueueStatus, *, now: datetime, **values: Any
) -> bool:
    statement = (
        run_queue.update()
        .where(run_queue.c.id == run_id, run_queue.c.status == "waiting")
        .values(status=status, updated_at=now, **values)
    )
    return (await conn.execute(statement)).rowcount == 1
