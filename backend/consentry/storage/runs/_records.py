"""A run's row as read back (``RunRecord``): the newest of a thread, a run's status, the thread's
runs as the LangGraph SDK lists them (none deleted there), one run; a run deleted on the SDK face
(hidden, still named by the thread's events and audit trail) and the client's metadata on it."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal, cast

import sqlalchemy as sa

from consentry.schemas.events import TerminalReason, Trigger
from consentry.storage.db.database import DbConnection, execute_unread
from consentry.storage.tables import runs

__all__ = [
    "RunRecord",
    "RunStatus",
    "delete_run",
    "last_run",
    "last_run_trigger",
    "run_status",
    "set_run_metadata",
    "thread_run",
    "thread_runs",
]

RunStatus = Literal["running", "queued", "ended"]
"""A run executes (``running``), waits for a worker (``queued``), or has its terminal reason
(``ended``)."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run's row, as stored (``tables.runs``)."""

    id: str
    thread_id: str
    trigger: Trigger
    status: RunStatus
    reason: TerminalReason | None
    error_code: str | None
    started_at: datetime
    ended_at: datetime | None
    inputs: list[dict[str, Any]] | None
    """The graph inputs it started with (``runtime.run_inputs``); None for runs from before."""
    input_tokens: int
    output_tokens: int
    metadata: dict[str, Any] | None
    """The client's (the LangGraph SDK's run ``metadata``); None when it sent none."""


_COLUMNS = tuple(runs.c[field.name] for field in fields(RunRecord))
"""The columns of a :class:`RunRecord`, in its fields' order (``RunRecord(*row)``)."""


async def last_run_trigger(conn: DbConnection, thread_id: str) -> Trigger | None:
    """How the thread's most recent run was started (``message`` or ``resume``), retries aside:
    a retry continues the run before it."""
    found = await conn.scalar(
        sa.select(runs.c.trigger)
        .where(runs.c.thread_id == thread_id, runs.c.trigger != "retry")
        .order_by(runs.c.started_at.desc())
        .limit(1)
    )
    return None if found is None else cast(Trigger, found)


async def last_run(conn: DbConnection, thread_id: str) -> RunRecord | None:
    """The thread's most recent run."""
    row = (
        await conn.execute(
            sa.select(*_COLUMNS)
            .where(runs.c.thread_id == thread_id)
            .order_by(runs.c.started_at.desc())
            .limit(1)
        )
    ).first()
    return None if row is None else RunRecord(*row)


async def run_status(conn: DbConnection, run_id: str) -> RunStatus | None:
    found = await conn.scalar(sa.select(runs.c.status).where(runs.c.id == run_id))
    return None if found is None else cast(RunStatus, found)


async def thread_runs(
    conn: DbConnection,
    thread_id: str,
    *,
    limit: int,
    offset: int,
    where: sa.ColumnElement[bool] | None = None,
) -> list[RunRecord]:
    """The thread's runs, newest first (``where``: a condition on ``tables.runs``); none
    deleted on the SDK face."""
    query = sa.select(*_COLUMNS).where(runs.c.thread_id == thread_id, runs.c.deleted_at.is_(None))
    if where is not None:
        query = query.where(where)
    query = query.order_by(runs.c.started_at.desc(), runs.c.id).limit(limit).offset(offset)
    return [RunRecord(*row) for row in await conn.execute(query)]


async def thread_run(conn: DbConnection, thread_id: str, run_id: str) -> RunRecord | None:
    """One run of the thread (None when the thread has no run with this id, or it was deleted
    on the SDK face)."""
    query = sa.select(*_COLUMNS).where(
        runs.c.thread_id == thread_id, runs.c.id == run_id, runs.c.deleted_at.is_(None)
    )
    row = (await conn.execute(query)).first()
    return None if row is None else RunRecord(*row)


async def delete_run(conn: DbConnection, thread_id: str, run_id: str, *, now: datetime) -> bool:
    """Mark the thread's ended run deleted (:func:`thread_run` no longer finds it); False when
    it has no such run, or it has not ended."""
    statement = (
        runs.update()
        .where(
            runs.c.thread_id == thread_id,
            runs.c.id == run_id,
            runs.c.status == "ended",
            runs.c.deleted_at.is_(None),
        )
        .values(deleted_at=now)
    )
    return (await conn.execute(statement)).rowcount == 1


async def set_run_metadata(conn: DbConnection, run_id: str, metadata: dict[str, Any]) -> None:
    await execute_unread(
        conn, runs.update().where(runs.c.id == run_id).values(metadata=metadata), {}
    )
