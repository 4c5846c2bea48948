"""Threads: creating, reading and listing a caller's threads, and the model tokens they used.

A thread's run-related columns (status, active run, lease, seq) belong to ``storage.leases``;
its runs to ``storage.runs``; its stored events to ``storage.events``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from consentry.errors import NotFoundError
from consentry.principal import Principal
from consentry.schemas.chat import ConsentPolicy
from consentry.schemas.events import TerminalReason
from consentry.schemas.threads import ThreadStatus, ThreadSummary
from consentry.storage.approvals import live_at
from consentry.storage.database import DbConnection, execute_unread
from consentry.storage.dialect import INSERTS
from consentry.storage.tables import approvals, tenant_usage, threads

__all__ = [
    "ThreadRecord",
    "add_tenant_usage",
    "create_thread",
    "get_thread",
    "list_threads",
    "remember_note",
    "summarize",
    "token_usage",
]


@dataclass(frozen=True, slots=True)
class ThreadRecord:
    """A thread's row, as stored (``tables.threads``)."""

    id: str
    tenant: str
    user_id: str
    graph: str
    project_id: str
    note_id: str | None
    title: str
    status: ThreadStatus
    last_reason: TerminalReason | None
    last_seq: int
    consent_policy: ConsentPolicy
    tokens_used: int
    pruned_through: int
    active_run_id: str | None
    lease_owner: str | None
    lease_expires_at: datetime | None
    fencing_token: int
    transcript_kept: bool
    created_at: datetime
    updated_at: datetime


_COLUMNS = tuple(threads.c[field.name] for field in fields(ThreadRecord))
"""The columns of a :class:`ThreadRecord`, in its fields' order: a row of them is
``ThreadRecord(*row)`` (by position: a quarter of the cost by name, see ``storage.events``)."""


def summarize(row: ThreadRecord) -> ThreadSummary:
    return ThreadSummary(
        thread_id=row.id,
        consent_policy=row.consent_policy,
        graph=row.graph,
        project_id=row.project_id,
        note_id=row.note_id,
        title=row.title,
        status=row.status,
        last_reason=row.last_reason,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


_CREATE_THREAD = threads.insert()


async def create_thread(
    conn: DbConnection,
    owner: Principal,
    *,
    thread_id: str,
    graph: str,
    project_id: str,
    note_id: str | None,
    title: str,
    consent_policy: ConsentPolicy,
    now: datetime,
) -> None:
    await conn.execute(
        _CREATE_THREAD,
        {
            "consent_policy": consent_policy,
            "id": thread_id,
            "tenant": owner.tenant,
            "user_id": owner.user,
            "graph": graph,
            "project_id": project_id,
            "note_id": note_id,
            "title": title,
            "status": "idle",
            "last_seq": 0,
            "transcript_kept": True,
            "created_at": now,
            "updated_at": now,
        },
    )


# Statements on the path of every run are built once (SQLAlchemy then reuses their compiled
# form and cache key); they take their values as bound parameters.
_GET_THREAD = sa.select(*_COLUMNS).where(
    threads.c.id == sa.bindparam("p_id"),
    threads.c.tenant == sa.bindparam("p_tenant"),
    threads.c.user_id == sa.bindparam("p_user"),
)


async def get_thread(conn: DbConnection, owner: Principal, thread_id: str) -> ThreadRecord:
    params = {"p_id": thread_id, "p_tenant": owner.tenant, "p_user": owner.user}
    row = (await conn.execute(_GET_THREAD, params)).first()
    if row is None:
        raise NotFoundError.of("thread", thread_id)
    return ThreadRecord(*row)


async def list_threads(
    conn: DbConnection,
    owner: Principal,
    *,
    limit: int,
    now: datetime,
    note_id: str | None = None,
    project_id: str | None = None,
) -> list[ThreadSummary]:
    """The owner's threads (about ``note_id``, in ``project_id``, when given), newest activity
    first. A thread whose consents all expired reads ``idle``, as in the thread's own detail."""
    live_consent = (
        sa.exists()
        .where(
            approvals.c.thread_id == threads.c.id,
            approvals.c.status == "pending",
            live_at(now),
        )
        .correlate(threads)
    )
    status = sa.case(
        (sa.and_(threads.c.status == "awaiting_consent", ~live_consent), "idle"),
        else_=threads.c.status,
    ).label("status")
    columns = [status if column.name == "status" else column for column in _COLUMNS]
    query = sa.select(*columns).where(
        threads.c.tenant == owner.tenant, threads.c.user_id == owner.user
    )
    if note_id is not None:
        query = query.where(threads.c.note_id == note_id)
    if project_id is not None:
        query = query.where(threads.c.project_id == project_id)
    rows = await conn.execute(query.order_by(threads.c.updated_at.desc()).limit(limit))
    return [summarize(ThreadRecord(*row)) for row in rows]


async def remember_note(conn: DbConnection, thread_id: str, note_id: str) -> None:
    """A thread from before threads remembered their note takes the note a message names."""
    await execute_unread(
        conn,
        threads.update()
        .where(threads.c.id == thread_id, threads.c.note_id.is_(None))
        .values(note_id=note_id),
        {},
    )


async def token_usage(conn: DbConnection, thread_id: str, tenant: str) -> tuple[int, int]:
    """Tokens used so far by the thread and by its tenant."""
    thread = await conn.scalar(sa.select(threads.c.tokens_used).where(threads.c.id == thread_id))
    owner = await conn.scalar(
        sa.select(tenant_usage.c.tokens_used).where(tenant_usage.c.tenant == tenant)
    )
    return int(thread or 0), int(owner or 0)


async def add_tenant_usage(conn: DbConnection, tenant: str, tokens: int) -> None:
    """Add a run's model tokens to its tenant's total (a thread's own total is added by
    ``leases.release_thread``)."""
    await execute_unread(
        conn, _ADD_TENANT_USAGE[conn.dialect.name], {"tenant": tenant, "tokens": tokens}
    )


def _add_tenant_usage(dialect_insert: Any) -> Any:
    upsert = dialect_insert(tenant_usage).values(
        tenant=sa.bindparam("tenant"), tokens_used=sa.bindparam("tokens")
    )
    return upsert.on_conflict_do_update(
        index_elements=[tenant_usage.c.tenant],
        set_={"tokens_used": tenant_usage.c.tokens_used + upsert.excluded.tokens_used},
    )


_ADD_TENANT_USAGE = {name: _add_tenant_usage(build) for name, build in INSERTS.items()}
