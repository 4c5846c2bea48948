"""Reading threads: one of an owner's (or whether another owner's has its id), an owner's list,
and a search by status, last reason, graph, ids and metadata. A thread whose consents all
expired reads ``idle``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, TypedDict, Unpack

import sqlalchemy as sa

from consentry.errors import NotFoundError
from consentry.principal import Principal
from consentry.schemas.events import TerminalReason
from consentry.schemas.threads import ThreadStatus, ThreadSummary
from consentry.storage.approvals import live_at
from consentry.storage.db.database import DbConnection, execute
from consentry.storage.db.direct import direct
from consentry.storage.metadata_filters import MetadataValue, metadata_equals
from consentry.storage.tables import approvals, threads
from consentry.storage.threads._records import _COLUMNS, ThreadRecord, summarize


async def thread_id_taken(conn: DbConnection, thread_id: str) -> bool:
    """Whether any thread, of any owner, has this id."""
    found = await conn.scalar(sa.select(threads.c.id).where(threads.c.id == thread_id))
    return found is not None


# Statements on the path of every run are built once (SQLAlchemy then reuses their compiled
# form and cache key); they take their values as bound parameters.
_GET_THREAD = direct(
    sa.select(*_COLUMNS).where(
        threads.c.id == sa.bindparam("p_id"),
        threads.c.tenant == sa.bindparam("p_tenant"),
        threads.c.user_id == sa.bindparam("p_user"),
    )
)


_GET_ANY_THREAD = direct(sa.select(*_COLUMNS).where(threads.c.id == sa.bindparam("p_id")))


def _owner_params(owner: Principal, thread_id: str) -> dict[str, str]:
    return {"p_id": thread_id, "p_tenant": owner.tenant, "p_user": owner.user}


async def get_thread(conn: DbConnection, owner: Principal, thread_id: str) -> ThreadRecord:
    row = (await execute(conn, _GET_THREAD, _owner_params(owner, thread_id))).first()
    if row is None:
        raise NotFoundError.of("thread", thread_id)
    return ThreadRecord(*row)


async def get_thread_or_taken(
    conn: DbConnection, owner: Principal, thread_id: str
) -> ThreadRecord | bool:
    """The owner's thread ``thread_id``; else whether another owner's thread has the id (one
    statement, for a thread a client names to create it)."""
    row = (await execute(conn, _GET_ANY_THREAD, {"p_id": thread_id})).first()
    if row is None:
        return False
    record = ThreadRecord(*row)
    return record if (record.tenant, record.user_id) == (owner.tenant, owner.user) else True


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
    status = _status_at(now)
    query = _owned(owner, status)
    if note_id is not None:
        query = query.where(threads.c.note_id == note_id)
    if project_id is not None:
        query = query.where(threads.c.project_id == project_id)
    rows = await conn.execute(query.order_by(threads.c.updated_at.desc()).limit(limit))
    return [summarize(ThreadRecord(*row)) for row in rows]


def _status_at(now: datetime) -> sa.ColumnElement[str]:
    """The thread's status as a reader sees it at ``now``: ``awaiting_consent`` only while one
    of its consents is live, else ``idle``."""
    live_consent = (
        sa.exists()
        .where(
            approvals.c.thread_id == threads.c.id,
            approvals.c.status == "pending",
            live_at(now),
        )
        .correlate(threads)
    )
    return sa.case(
        (sa.and_(threads.c.status == "awaiting_consent", ~live_consent), "idle"),
        else_=threads.c.status,
    ).label("status")


def _owned(owner: Principal, status: sa.ColumnElement[str]) -> sa.Select[Any]:
    columns = [status if column.name == "status" else column for column in _COLUMNS]
    return sa.select(*columns).where(
        threads.c.tenant == owner.tenant, threads.c.user_id == owner.user
    )


class ThreadFilter(TypedDict, total=False):
    """What :func:`search_threads` and :func:`count_threads` filter on (each given one holds)."""

    status: ThreadStatus | None
    """The status as :func:`list_threads` reads it."""
    last_reason_in: Sequence[TerminalReason] | None
    last_reason_not_in: Sequence[TerminalReason] | None
    graph: str | None
    ids: Sequence[str] | None
    metadata: Mapping[str, MetadataValue] | None
    """Each key's value equals the one given."""
    assistant: str | None
    """The stored assistant its latest run was on (given as None: none, its graph's own)."""
    note: str
    """The note it is about."""


async def search_threads(
    conn: DbConnection,
    owner: Principal,
    *,
    now: datetime,
    limit: int,
    offset: int = 0,
    order_by: Literal["created_at", "updated_at", "thread_id"] = "updated_at",
    descending: bool = True,
    **filters: Unpack[ThreadFilter],
) -> list[ThreadRecord]:
    """The owner's threads that match every filter given, with their status as
    :func:`list_threads` reads it."""
    query = _matching(conn, owner, now, filters)
    column = threads.c.id if order_by == "thread_id" else threads.c[order_by]
    query = query.order_by(column.desc() if descending else column.asc(), threads.c.id)
    rows = await conn.execute(query.limit(limit).offset(offset))
    return [ThreadRecord(*row) for row in rows]


async def count_threads(
    conn: DbConnection, owner: Principal, *, now: datetime, **filters: Unpack[ThreadFilter]
) -> int:
    """How many of the owner's threads :func:`search_threads` would find with these filters."""
    query = _matching(conn, owner, now, filters)
    result = await conn.execute(sa.select(sa.func.count()).select_from(query.subquery()))
    return int(result.scalar_one())


def _matching(
    conn: DbConnection, owner: Principal, now: datetime, filters: ThreadFilter
) -> sa.Select[Any]:
    current = _status_at(now)
    query = _owned(owner, current)
    if (status := filters.get("status")) is not None:
        query = query.where(current == status)
    if (reasons := filters.get("last_reason_in")) is not None:
        query = query.where(threads.c.last_reason.in_(list(reasons)))
    if (other_reasons := filters.get("last_reason_not_in")) is not None:
        query = query.where(
            sa.or_(
                threads.c.last_reason.is_(None),
                threads.c.last_reason.not_in(list(other_reasons)),
            )
        )
    if (graph := filters.get("graph")) is not None:
        query = query.where(threads.c.graph == graph)
    if "assistant" in filters:
        assistant = filters["assistant"]
        query = query.where(
            threads.c.assistant_id.is_(None)
            if assistant is None
            else threads.c.assistant_id == assistant
        )
    if (note := filters.get("note")) is not None:
        query = query.where(threads.c.note_id == note)
    if (ids := filters.get("ids")) is not None:
        query = query.where(threads.c.id.in_(list(ids)))
    for key, value in (filters.get("metadata") or {}).items():
        query = query.where(metadata_equals(threads.c.metadata, conn.dialect.name, key, value))
    return query
