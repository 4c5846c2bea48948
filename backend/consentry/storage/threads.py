"""Threads: creating, reading, listing, searching and deleting a caller's threads, their
client's metadata, and the model tokens they used.

A thread's run-related columns (status, active run, lease, seq) belong to ``storage.leases``;
its runs to ``storage.runs``; its stored events to ``storage.events``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from consentry.errors import NotFoundError
from consentry.principal import Principal
from consentry.schemas.chat import ConsentPolicy
from consentry.schemas.events import TerminalReason
from consentry.schemas.threads import ThreadStatus, ThreadSummary
from consentry.storage.approvals import live_at
from consentry.storage.database import DbConnection, execute, execute_unread
from consentry.storage.dialect import INSERTS
from consentry.storage.direct import direct
from consentry.storage.tables import approvals, tenant_usage, threads

__all__ = [
    "MetadataValue",
    "ThreadRecord",
    "add_tenant_usage",
    "bind_graph",
    "create_thread",
    "delete_thread",
    "get_thread",
    "insert_thread_unless_taken",
    "list_threads",
    "remember_note",
    "search_threads",
    "set_first_title",
    "set_metadata",
    "summarize",
    "thread_id_taken",
    "token_usage",
]

MetadataValue = str | int | float | bool
"""A value a metadata search compares (``search_threads``): a JSON scalar."""


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
    metadata: dict[str, Any] | None
    """The client's metadata (``PATCH /threads/{id}`` merges into it); None: none given."""


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


_CREATE_THREAD = direct(threads.insert())


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
    """Nobody reads its result: it goes with the transaction's next statement (the run's claim)
    or its commit (``database.execute_unread``)."""
    await execute_unread(
        conn,
        _CREATE_THREAD,
        _new_thread(
            owner,
            thread_id=thread_id,
            graph=graph,
            project_id=project_id,
            note_id=note_id,
            title=title,
            consent_policy=consent_policy,
            now=now,
        ),
    )


def _new_thread(
    owner: Principal,
    *,
    thread_id: str,
    graph: str,
    project_id: str,
    note_id: str | None,
    title: str,
    consent_policy: ConsentPolicy,
    now: datetime,
) -> dict[str, Any]:
    return {
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
    }


async def insert_thread_unless_taken(
    conn: DbConnection,
    owner: Principal,
    *,
    thread_id: str,
    graph: str,
    project_id: str,
    title: str,
    metadata: Mapping[str, Any] | None,
    now: datetime,
) -> bool:
    """Create an idle thread that has never run, under an id the client chose: False (and
    nothing written) when a thread of anybody has that id already."""
    values = _new_thread(
        owner,
        thread_id=thread_id,
        graph=graph,
        project_id=project_id,
        note_id=None,
        title=title,
        consent_policy="ask",
        now=now,
    )
    statement = (
        INSERTS[conn.dialect.name](threads)
        .values(**values, metadata=dict(metadata) if metadata else None)
        .on_conflict_do_nothing(index_elements=[threads.c.id])
        .returning(threads.c.id)
    )
    return (await conn.execute(statement)).first() is not None


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


async def search_threads(
    conn: DbConnection,
    owner: Principal,
    *,
    now: datetime,
    limit: int,
    offset: int = 0,
    status: ThreadStatus | None = None,
    last_reason_in: Sequence[TerminalReason] | None = None,
    last_reason_not_in: Sequence[TerminalReason] | None = None,
    graph: str | None = None,
    ids: Sequence[str] | None = None,
    metadata: Mapping[str, MetadataValue] | None = None,
    order_by: Literal["created_at", "updated_at", "thread_id"] = "updated_at",
    descending: bool = True,
) -> list[ThreadRecord]:
    """The owner's threads that match every filter given, with their status as
    :func:`list_threads` reads it (``status`` filters on that one). ``metadata``: each key's
    value equals the one given."""
    current = _status_at(now)
    query = _owned(owner, current)
    if status is not None:
        query = query.where(current == status)
    if last_reason_in is not None:
        query = query.where(threads.c.last_reason.in_(list(last_reason_in)))
    if last_reason_not_in is not None:
        query = query.where(
            sa.or_(
                threads.c.last_reason.is_(None),
                threads.c.last_reason.not_in(list(last_reason_not_in)),
            )
        )
    if graph is not None:
        query = query.where(threads.c.graph == graph)
    if ids is not None:
        query = query.where(threads.c.id.in_(list(ids)))
    for key, value in (metadata or {}).items():
        query = query.where(_metadata_equals(conn.dialect.name, key, value))
    column = threads.c.id if order_by == "thread_id" else threads.c[order_by]
    query = query.order_by(column.desc() if descending else column.asc(), threads.c.id)
    rows = await conn.execute(query.limit(limit).offset(offset))
    return [ThreadRecord(*row) for row in rows]


def _metadata_equals(dialect: str, key: str, value: MetadataValue) -> sa.ColumnElement[bool]:
    """The metadata's ``key`` holds ``value``: the same JSON type (text, number, boolean) and
    value. SQLite's ``json_type`` and ``json_extract``, PostgreSQL's ``json_typeof`` and ``->>``
    (a number compared as ``numeric`` only when it is one). Keys hold no ``"``
    (``schemas.sdk``)."""
    column = threads.c.metadata
    kind = "boolean" if isinstance(value, bool) else "text" if isinstance(value, str) else "number"
    if dialect == "postgresql":
        typeof = sa.func.json_typeof(column.op("->")(key))
        text = column.op("->>")(key)
        if kind == "boolean":
            return sa.and_(typeof == "boolean", text == ("true" if value else "false"))
        if kind == "text":
            return sa.and_(typeof == "string", text == value)
        return sa.case((typeof == "number", sa.cast(text, sa.Numeric) == value), else_=sa.false())
    path = f'$."{key}"'
    sqlite_type = sa.func.json_type(column, path)
    if kind == "boolean":
        return sqlite_type == ("true" if value else "false")
    extracted = sa.func.json_extract(column, path)
    if kind == "text":
        return sa.and_(sqlite_type == "text", extracted == value)
    return sa.and_(sqlite_type.in_(["integer", "real"]), extracted == value)


async def set_metadata(
    conn: DbConnection,
    owner: Principal,
    thread_id: str,
    *,
    metadata: Mapping[str, Any],
    now: datetime,
) -> ThreadRecord:
    """Merge ``metadata`` into the thread's (a key given ``None`` keeps ``None``), in the
    caller's write transaction; the thread's ``updated_at`` moves to ``now``."""
    locked = await conn.execute(_GET_THREAD.with_for_update(), _owner_params(owner, thread_id))
    row = locked.first()
    if row is None:
        raise NotFoundError.of("thread", thread_id)
    merged = {**(ThreadRecord(*row).metadata or {}), **metadata}
    updated = await conn.execute(
        threads.update()
        .where(threads.c.id == thread_id)
        .values(metadata=merged or None, updated_at=now)
        .returning(*_COLUMNS)
    )
    return ThreadRecord(*updated.one())


async def bind_graph(conn: DbConnection, thread_id: str, graph: str) -> bool:
    """Give a thread that has never run (no run ever claimed it) another graph; False when it
    has run, or runs now."""
    bound = await conn.execute(
        threads.update()
        .where(threads.c.id == thread_id, threads.c.last_seq == 0, threads.c.status == "idle")
        .values(graph=graph)
        .returning(threads.c.id)
    )
    return bound.first() is not None


async def delete_thread(conn: DbConnection, owner: Principal, thread_id: str) -> bool:
    """Delete the owner's thread with its runs, events, approvals, transcript and tool calls
    (their foreign keys cascade; audit records stay); False (and nothing deleted) while a run is
    active on it. ``NotFoundError`` when the owner has no such thread."""
    deleted = await conn.execute(
        threads.delete()
        .where(
            threads.c.id == thread_id,
            threads.c.tenant == owner.tenant,
            threads.c.user_id == owner.user,
            threads.c.status != "running",
        )
        .returning(threads.c.id)
    )
    if deleted.first() is not None:
        return True
    await get_thread(conn, owner, thread_id)  # 404 when it is not the owner's
    return False


async def set_first_title(conn: DbConnection, thread_id: str, title: str) -> None:
    """Title a thread that has never run (``POST /threads``) by its first message."""
    await execute_unread(
        conn,
        threads.update()
        .where(threads.c.id == thread_id, threads.c.last_seq == 0)
        .values(title=title),
        {},
    )


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
