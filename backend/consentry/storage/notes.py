"""Projects, notes, note versions, full-text search, and the tutor's note effects.

Every function takes the caller's :class:`Principal` and only ever sees that owner's rows: another
owner's id behaves exactly like an unknown id.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from uuid import uuid4

import sqlalchemy as sa

from consentry.errors import ConflictError, NotFoundError
from consentry.principal import Principal
from consentry.schemas.notes import Note, NoteVersion, Project, SearchHit
from consentry.storage.approvals import DECIDED_BY_NAME
from consentry.storage.database import DbConnection
from consentry.storage.dialect import insert
from consentry.storage.effects import apply_once
from consentry.storage.tables import approvals, note_versions, notes, projects
from consentry_graphs.sentences import STOPWORDS
from consentry_graphs.services import AppliedDeletion, AppliedEdit, NoteSnapshot

__all__ = [
    "apply_note_creation",
    "apply_note_deletion",
    "apply_note_edit",
    "create_default_project",
    "create_note",
    "create_project",
    "default_project_id",
    "delete_note",
    "find_default_project_id",
    "find_note",
    "get_note",
    "get_project",
    "list_note_versions",
    "list_notes",
    "list_projects",
    "note_snapshot",
    "search_notes",
    "update_note",
]

DEFAULT_PROJECT_NAME = "My notes"
_TOKEN = re.compile(r"\w+", re.UNICODE)


def _owned(table: sa.Table, owner: Principal) -> sa.ColumnElement[bool]:
    return sa.and_(table.c.tenant == owner.tenant, table.c.user_id == owner.user)


def _project(row: sa.Row[Any]) -> Project:
    return Project(
        project_id=row.id, name=row.name, is_default=row.is_default, created_at=row.created_at
    )


def _note(row: sa.Row[Any]) -> Note:
    return Note(
        note_id=row.id,
        project_id=row.project_id,
        title=row.title,
        content=row.content,
        version=row.version,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def create_project(
    conn: DbConnection, owner: Principal, *, name: str, now: datetime, is_default: bool = False
) -> Project:
    values = {
        "id": str(uuid4()),
        "tenant": owner.tenant,
        "user_id": owner.user,
        "name": name,
        "is_default": is_default,
        "created_at": now,
    }
    await conn.execute(projects.insert().values(values))
    return Project(project_id=values["id"], name=name, is_default=is_default, created_at=now)


async def list_projects(conn: DbConnection, owner: Principal) -> list[Project]:
    rows = await conn.execute(
        projects.select().where(_owned(projects, owner)).order_by(projects.c.created_at)
    )
    return [_project(row) for row in rows]


_OWNED_PROJECT = projects.select().where(
    projects.c.id == sa.bindparam("p_id"),
    projects.c.tenant == sa.bindparam("p_tenant"),
    projects.c.user_id == sa.bindparam("p_user"),
)
_DEFAULT_PROJECT = sa.select(projects.c.id).where(
    projects.c.tenant == sa.bindparam("p_tenant"),
    projects.c.user_id == sa.bindparam("p_user"),
    projects.c.is_default,
)


async def get_project(conn: DbConnection, owner: Principal, project_id: str) -> Project:
    owned = {"p_id": project_id, "p_tenant": owner.tenant, "p_user": owner.user}
    row = (await conn.execute(_OWNED_PROJECT, owned)).first()
    if row is None:
        raise NotFoundError.of("project", project_id)
    return _project(row)


async def find_default_project_id(conn: DbConnection, owner: Principal) -> str | None:
    """The owner's default project, if it exists yet (a read: no write transaction needed)."""
    found = await conn.scalar(_DEFAULT_PROJECT, {"p_tenant": owner.tenant, "p_user": owner.user})
    return None if found is None else str(found)


async def create_default_project(
    conn: DbConnection, owner: Principal, *, now: datetime
) -> str | None:
    """Create the owner's default project unless it exists: its id if this call created it, None
    if it existed (or a racing request created it first: a partial unique index and
    ``ON CONFLICT DO NOTHING``)."""
    project_id = str(uuid4())
    created = await conn.execute(
        insert(conn, projects)
        .values(
            id=project_id,
            tenant=owner.tenant,
            user_id=owner.user,
            name=DEFAULT_PROJECT_NAME,
            is_default=True,
            created_at=now,
        )
        .on_conflict_do_nothing(
            index_elements=[projects.c.tenant, projects.c.user_id],
            index_where=projects.c.is_default,
        )
        .returning(projects.c.id)  # (an INSERT's row count is not reported everywhere)
    )
    return project_id if created.first() is not None else None


async def default_project_id(conn: DbConnection, owner: Principal, *, now: datetime) -> str:
    """The owner's default project, created on first use (once, however many first requests
    race)."""
    found = await find_default_project_id(conn, owner)
    if found is None:
        found = await create_default_project(conn, owner, now=now)
    if found is None:
        found = await find_default_project_id(conn, owner)
    assert found is not None  # inserted now, or by the request that won the race
    return found


async def _insert_version(
    conn: DbConnection, note: Note, *, author: str, approval_id: str | None
) -> None:
    await conn.execute(
        note_versions.insert().values(
            note_id=note.note_id,
            version=note.version,
            title=note.title,
            content=note.content,
            author=author,
            approval_id=approval_id,
            created_at=note.updated_at,
        )
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
) -> Note:
    await get_project(conn, owner, project_id)
    note = Note(
        note_id=str(uuid4()),
        project_id=project_id,
        title=title,
        content=content,
        version=1,
        created_at=now,
        updated_at=now,
    )
    await conn.execute(
        notes.insert().values(
            id=note.note_id,
            project_id=project_id,
            tenant=owner.tenant,
            user_id=owner.user,
            title=title,
            content=content,
            version=1,
            created_at=now,
            updated_at=now,
        )
    )
    await _insert_version(
        conn, note, author="assistant" if approval_id else "user", approval_id=approval_id
    )
    return note


async def list_notes(conn: DbConnection, owner: Principal, project_id: str) -> list[Note]:
    await get_project(conn, owner, project_id)
    rows = await conn.execute(
        notes.select()
        .where(notes.c.project_id == project_id, _owned(notes, owner))
        .order_by(notes.c.updated_at.desc())
    )
    return [_note(row) for row in rows]


async def find_note(conn: DbConnection, owner: Principal, note_id: str) -> Note | None:
    row = (
        await conn.execute(notes.select().where(notes.c.id == note_id, _owned(notes, owner)))
    ).first()
    return _note(row) if row is not None else None


async def get_note(conn: DbConnection, owner: Principal, note_id: str) -> Note:
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
) -> Note:
    """Write the next version if the note is still at ``base_version``; else 409 (no write)."""
    changes: dict[str, Any] = {"version": notes.c.version + 1, "updated_at": now}
    if title is not None:
        changes["title"] = title
    if content is not None:
        changes["content"] = content
    result = await conn.execute(
        notes.update()
        .where(notes.c.id == note_id, _owned(notes, owner), notes.c.version == base_version)
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
    await _insert_version(
        conn, current, author="assistant" if approval_id else "user", approval_id=approval_id
    )
    return current


async def delete_note(conn: DbConnection, owner: Principal, note_id: str) -> None:
    result = await conn.execute(notes.delete().where(notes.c.id == note_id, _owned(notes, owner)))
    if result.rowcount == 0:
        raise NotFoundError.of("note", note_id)


async def list_note_versions(
    conn: DbConnection, owner: Principal, note_id: str
) -> list[NoteVersion]:
    """Every version, oldest first; an assistant's with the decision on the consent that
    authorized it (the approval the version carries; the owner's own, as the note is)."""
    await get_note(conn, owner, note_id)
    rows = await conn.execute(
        sa.select(
            note_versions,
            approvals.c.decision.label("approval_decision"),
            approvals.c.decided_by,
        )
        .select_from(
            note_versions.outerjoin(approvals, approvals.c.id == note_versions.c.approval_id)
        )
        .where(note_versions.c.note_id == note_id)
        .order_by(note_versions.c.version)
    )
    versions = []
    for row in rows:
        recorded = row.approval_decision or {}
        decision = recorded.get("decision")
        versions.append(
            NoteVersion(
                note_id=row.note_id,
                version=row.version,
                title=row.title,
                content=row.content,
                author=row.author,
                approval_id=row.approval_id,
                decision=decision if decision in ("approve", "edit") else None,
                decided_by=row.decided_by if row.approval_id else None,
                decided_by_name=recorded.get(DECIDED_BY_NAME),
                created_at=row.created_at,
            )
        )
    return versions


def _search_words(text: str) -> list[str]:
    """Every meaningful word of the free text, lower-cased, once."""
    words = [word.lower() for word in _TOKEN.findall(text)]
    return list(dict.fromkeys(word for word in words if word not in STOPWORDS))


def fts_query(text: str) -> str | None:
    """Turn free text into an FTS5 query: every meaningful word, as a prefix, OR-ed together."""
    words = _search_words(text)
    return " OR ".join(f'"{word}"*' for word in words) if words else None


def tsquery(text: str) -> str | None:
    """The same for PostgreSQL's ``to_tsquery``: ``word:* | word2:*``."""
    words = _search_words(text)
    return " | ".join(f"{word}:*" for word in words) if words else None


# SQLite: FTS5 with BM25, the title weighing 4 times the content (lower rank is better).
_SEARCH_SQLITE = sa.text(
    "SELECT n.id, n.title, snippet(notes_fts, 1, '**', '**', '…', 24) AS snippet, "
    "-bm25(notes_fts, 4.0, 1.0) AS score "
    "FROM notes_fts JOIN notes AS n ON n.rowid = notes_fts.rowid "
    "WHERE notes_fts MATCH :match AND n.project_id = :project_id "
    "AND n.tenant = :tenant AND n.user_id = :user_id "
    "ORDER BY score DESC LIMIT :limit"
)
# PostgreSQL: the generated tsvector, title (A) weighing 4 times the content (B).
_SEARCH_POSTGRES = sa.text(
    "SELECT n.id, n.title, ts_headline('english', n.content, q, "
    "'StartSel=**, StopSel=**, MaxWords=24, MinWords=8') AS snippet, "
    "ts_rank('{0.1, 0.2, 0.25, 1.0}', n.search, q) AS score "
    "FROM notes AS n, to_tsquery('english', :match) AS q "
    "WHERE n.search @@ q AND n.project_id = :project_id "
    "AND n.tenant = :tenant AND n.user_id = :user_id "
    "ORDER BY score DESC LIMIT :limit"
)


async def search_notes(
    conn: DbConnection, owner: Principal, project_id: str, query: str, *, limit: int
) -> list[SearchHit]:
    postgres = conn.dialect.name == "postgresql"
    match = tsquery(query) if postgres else fts_query(query)
    if match is None:
        return []
    rows = await conn.execute(
        _SEARCH_POSTGRES if postgres else _SEARCH_SQLITE,
        {
            "match": match,
            "project_id": project_id,
            "tenant": owner.tenant,
            "user_id": owner.user,
            "limit": limit,
        },
    )
    return [
        SearchHit(note_id=row.id, title=row.title, snippet=row.snippet, score=float(row.score))
        for row in rows
    ]


def note_snapshot(note: Note) -> NoteSnapshot:
    return NoteSnapshot(
        note_id=note.note_id,
        project_id=note.project_id,
        title=note.title,
        content=note.content,
        version=note.version,
    )


async def apply_note_edit(
    conn: DbConnection,
    owner: Principal,
    *,
    approval_id: str,
    note_id: str,
    title: str,
    content: str,
    base_version: int,
    now: datetime,
) -> AppliedEdit:
    """Apply an approved edit exactly once: the ledger row and the note write share this
    transaction, and a second call for the same approval returns the recorded outcome."""

    async def act() -> AppliedEdit:
        current = await find_note(conn, owner, note_id)
        if current is None:
            outcome = AppliedEdit(outcome="note_missing")
        elif current.version != base_version:
            outcome = AppliedEdit(outcome="note_changed", current_version=current.version)
        else:
            note = await update_note(
                conn,
                owner,
                note_id,
                base_version=base_version,
                title=title,
                content=content,
                now=now,
                approval_id=approval_id,
            )
            outcome = AppliedEdit(outcome="applied", note=note_snapshot(note))
        return outcome

    return await apply_once(
        conn,
        owner,
        approval_id=approval_id,
        kind="note_edit",
        result_model=AppliedEdit,
        act=act,
        now=now,
    )


async def apply_note_creation(
    conn: DbConnection,
    owner: Principal,
    *,
    approval_id: str,
    project_id: str,
    title: str,
    content: str,
    now: datetime,
) -> AppliedEdit:
    """Create an approved note exactly once (the ledger row shares this transaction)."""

    async def act() -> AppliedEdit:
        note = await create_note(
            conn,
            owner,
            project_id=project_id,
            title=title,
            content=content,
            now=now,
            approval_id=approval_id,
        )
        outcome = AppliedEdit(outcome="applied", note=note_snapshot(note))
        return outcome

    return await apply_once(
        conn,
        owner,
        approval_id=approval_id,
        kind="note_create",
        result_model=AppliedEdit,
        act=act,
        now=now,
    )


async def apply_note_deletion(
    conn: DbConnection,
    owner: Principal,
    *,
    approval_id: str,
    note_id: str,
    version: int,
    now: datetime,
) -> AppliedDeletion:
    """Delete an approved note exactly once, and only if it is still at ``version``."""

    async def act() -> AppliedDeletion:
        deleted = await conn.execute(
            notes.delete().where(
                notes.c.id == note_id, _owned(notes, owner), notes.c.version == version
            )
        )
        if deleted.rowcount == 1:
            outcome = AppliedDeletion(outcome="deleted", note_id=note_id)
        else:
            current = await find_note(conn, owner, note_id)
            outcome = (
                AppliedDeletion(outcome="note_missing", note_id=note_id)
                if current is None
                else AppliedDeletion(
                    outcome="note_changed", note_id=note_id, current_version=current.version
                )
            )
        return outcome

    return await apply_once(
        conn,
        owner,
        approval_id=approval_id,
        kind="note_delete",
        result_model=AppliedDeletion,
        act=act,
        now=now,
    )
