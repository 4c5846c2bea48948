"""Writing threads: creating one (under a client's id too), merging the client's metadata,
binding a graph, titling it, remembering its note, and deleting it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from consentry.errors import NotFoundError
from consentry.principal import Principal
from consentry.schemas.chat import ConsentPolicy
from consentry.storage.db.database import DbConnection, execute_unread
from consentry.storage.db.dialect import INSERTS
from consentry.storage.db.direct import direct
from consentry.storage.tables import threads
from consentry.storage.threads._reads import _GET_THREAD, _owner_params, get_thread
from consentry.storage.threads._records import _COLUMNS, ThreadRecord

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
    note_id: str | None = None,
) -> bool:
    """Create an idle thread that has never run, under an id the client chose: False (and
    nothing written) when a thread of anybody has that id already."""
    values = _new_thread(
        owner,
        thread_id=thread_id,
        graph=graph,
        project_id=project_id,
        note_id=note_id,
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


async def set_note(conn: DbConnection, thread_id: str, *, note_id: str | None) -> None:
    """The note a thread is about (None: none), set by its client, in the caller's write
    transaction (which has checked the note is the owner's and in the thread's project)."""
    await execute_unread(
        conn, threads.update().where(threads.c.id == thread_id).values(note_id=note_id), {}
    )


async def keep_run_options(conn: DbConnection, thread_id: str, options: dict[str, Any]) -> None:
    """The options a client's run gave: what the thread's runs given none get from now on."""
    await execute_unread(
        conn, threads.update().where(threads.c.id == thread_id).values(run_options=options), {}
    )


async def delete_threads_of_assistant(
    conn: DbConnection, owner: Principal, assistant_id: str
) -> list[str] | str:
    """Delete the owner's threads whose latest run was on ``assistant_id`` (as
    :func:`delete_thread` does): their ids, or (nothing deleted) the id of one a run is active
    on."""
    rows = await conn.execute(
        sa.select(threads.c.id, threads.c.status).where(
            threads.c.tenant == owner.tenant,
            threads.c.user_id == owner.user,
            threads.c.assistant_id == assistant_id,
        )
    )
    found = list(rows)
    running = [row.id for row in found if row.status == "running"]
    if running:
        return str(running[0])
    # A run claimed one meanwhile (PostgreSQL): that thread stays, with its checkpoints.
    return [str(row.id) for row in found if await delete_thread(conn, owner, row.id)]
