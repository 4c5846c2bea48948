"""Notes: created, read, updated against a base version, deleted; every write of a note's text
records the version it makes (``note_versions``, read by :mod:`consentry.storage.note_versions`).

Every function takes the caller's :class:`Principal` and only ever sees that owner's rows: another
owner's id behaves exactly like an unknown id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import uuid4

import sqlalchemy as sa

from consentry.errors import ConflictError, NotFoundError
from consentry.principal import Principal
from consentry.storage.db.database import DbConnection
from consentry.storage.db.direct import direct
from consentry.storage.projects import get_project
from consentry.storage.tables import note_versions, notes

__all__ = [
    "NoteRecord",
    "create_note",
    "delete_note",
    "delete_note_at_version",
    "find_note",
    "get_note",
    "list_notes",
    "recent_notes",
    "update_note",
]


@dataclass(frozen=True, slots=True)
class NoteRecord:
    """A stored note at its current version (the wire model is
    :class:`consentry.schemas.notes.Note`)."""

    note_id: str
    project_id: str
    title: str
    content: str
    version: int
    created_at: datetime
    updated_at: datetime


def _owned(owner: Principal) -> sa.ColumnElement[bool]:
    return sa.and_(notes.c.tenant == owner.tenant, notes.c.user_id == owner.user)


# A graph reads its note at every turn and writes one at every approved change: these statements
# are built and compiled once (``storage.db.direct``), and run with their values.
_FIND_NOTE = direct(
    notes.select().where(
        notes.c.id == sa.bindparam("p_id"),
        notes.c.tenant == sa.bindparam("p_tenant"),
        notes.c.user_id == sa.bindparam("p_user"),
    )
)
_INSERT_NOTE = direct(notes.insert())
_INSERT_VERSION = direct(note_versions.insert())


def _note(row: sa.Row[Any]) -> NoteRecord:
    return NoteRecord(
        note_id=row.id,
        project_id=row.project_id,
        title=row.title,
        content=row.content,
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def _insert_version(conn: DbConnection, note: NoteRecord, *, approval_id: str | None) -> None:
    """The version row of a note write: the assistant's when an approval authorized it."""
    await conn.execute(
        _INSERT_VERSION,
        {
            "note_id": note.note_id,
            "version": note.version,
            "title": note.title,
            "content": note.content,
            "author": "assistant" if approval_id else "user",
            "approval_id": approval_id,
            "created_at": note.updated_at,
        },
    )


async def create_note(
    conn: DbConnection,
    owner: Principal,
    *,
    project_id: str,
    title: str,
    content: str,
    now: datetime,
    approval_id: str | None = None,
) -> NoteRecord:
    await get_project(conn, owner, project_id)
    note = NoteRecord(
        note_id=str(uuid4()),
        project_id=project_id,
        title=title,
        content=content,
        version=1,
        created_at=now,
        updated_at=now,
    )
    await conn.execute(
        _INSERT_NOTE,
        {
            "id": note.note_id,
            "project_id": project_id,
            "tenant": owner.tenant,
            "user_id": owner.user,
            "title": title,
            "content": content,
            "version": 1,
            "created_at": now,
            "updated_at": now,
        },
    )
    await _insert_version(conn, note, approval_id=approval_id)
    return note


async def list_notes(conn: DbConnection, owner: Principal, project_id: str) -> list[NoteRecord]:
    await get_project(conn, owner, project_id)
    rows = await conn.execute(
        notes.select()
        .where(notes.c.project_id == project_id, _owned(owner))
        .order_by(notes.c.updated_at.desc())
    )
    return [_note(row) for row in rows]


async def recent_notes(
    conn: DbConnection, owner: Principal, project_id: str, *, limit: int
) -> list[NoteRecord]:
    """The project's notes, the most recently changed first, at most ``limit``: one query, no
    404 (a project that is not the owner's has none of their notes)."""
    rows = await conn.execute(
        notes.select()
        .where(notes.c.project_id == project_id, _owned(owner))
        .order_by(notes.c.updated_at.desc(), notes.c.id)
        .limit(limit)
    )
    return [_note(row) for row in rows]


async def find_note(conn: DbConnection, owner: Principal, note_id: str) -> NoteRecord | None:
    owned = {"p_id": note_id, "p_tenant": owner.tenant, "p_user": owner.user}
    row = (await conn.execute(_FIND_NOTE, owned)).first()
    return _note(row) if row is not None else None


async def get_note(conn: DbConnection, owner: Principal, note_id: str) -> NoteRecord:
    note = await find_note(conn, owner, note_id)
    if note is None:
        raise NotFoundError.of("note", note_id)
    return note


async def update_note(
    conn: DbConnection,
    owner: Principal,
    note_id: str,
    *,
    base_version: int,
    title: str | None,
    content: str | None,
    now: datetime,
    approval_id: str | None = None,
) -> NoteRecord:
    """Write the next version if the note is still at ``base_version``; else 409 (no write)."""
    changes: dict[str, Any] = {"version": notes.c.version + 1, "updated_at": now}
    if title is not None:
        changes["title"] = title
    if content is not None:
        changes["content"] = content
    result = await conn.execute(
        notes.update()
        .where(notes.c.id == note_id, _owned(owner), notes.c.version == base_version)
        .values(changes)
    )
    current = await get_note(conn, owner, note_id)
    if result.rowcount == 0:
        raise ConflictError(
            f"The note is at version {current.version}, not {base_version}; reload and retry.",
            code="version_conflict",
            details={
                "note_id": note_id,
                "current_version": current.version,
                "base_version": base_version,
            },
        )
    await _insert_version(conn, current, approval_id=approval_id)
    return current


async def delete_note(conn: DbConnection, owner: Principal, note_id: str) -> None:
    result = await conn.execute(notes.delete().where(notes.c.id == note_id, _owned(owner)))
    if result.rowcount == 0:
        raise NotFoundError.of("note", note_id)


async def delete_note_at_version(
    conn: DbConnection, owner: Principal, note_id: str, *, version: int
) -> bool:
    """Delete the note only if it is still at ``version``: whether it did."""
    result = await conn.execute(
        notes.delete().where(notes.c.id == note_id, _owned(owner), notes.c.version == version)
    )
    return result.rowcount == 1
