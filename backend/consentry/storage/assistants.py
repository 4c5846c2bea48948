"""Assistants a client created (``tables.assistants``): an owner's configuration of a served graph
(its ``config``, ``context``, name, description and metadata), each change a new version kept in
``tables.assistant_versions``; the row holds the version in use (the newest, or the one
``set_version`` chose). The served graphs' own assistants are not stored (``runtime.assistants``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.storage.db.database import DbConnection
from consentry.storage.metadata_filters import MetadataValue, metadata_equals
from consentry.storage.tables import assistant_versions, assistants

__all__ = [
    "AssistantFields",
    "AssistantRecord",
    "AssistantVersionRecord",
    "add_version",
    "assistant_id_taken",
    "assistant_versions_of",
    "count_assistants",
    "delete_assistant",
    "get_assistant",
    "insert_assistant",
    "search_assistants",
    "set_version",
]


@dataclass(frozen=True, slots=True)
class AssistantFields:
    """What a version of an assistant says."""

    graph: str
    name: str
    description: str | None
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class AssistantRecord(AssistantFields):
    """An assistant's row: the version in use."""

    id: str
    tenant: str
    user_id: str
    version: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class AssistantVersionRecord(AssistantFields):
    """One of an assistant's versions."""

    assistant_id: str
    version: int
    created_at: datetime


_COLUMNS = tuple(assistants.c[f.name] for f in fields(AssistantRecord))
_VERSION_COLUMNS = tuple(assistant_versions.c[f.name] for f in fields(AssistantVersionRecord))


def _fields_of(version: AssistantFields) -> dict[str, Any]:
    """The fields of a version (of a record too, which has more)."""
    return {f.name: getattr(version, f.name) for f in fields(AssistantFields)}


def _changed(
    current: AssistantRecord, values: dict[str, Any], *, version: int, now: datetime
) -> AssistantRecord:
    return AssistantRecord(
        id=current.id,
        tenant=current.tenant,
        user_id=current.user_id,
        version=version,
        created_at=current.created_at,
        updated_at=now,
        **values,
    )


def _owned(owner: Principal) -> sa.ColumnElement[bool]:
    return sa.and_(assistants.c.tenant == owner.tenant, assistants.c.user_id == owner.user)


async def assistant_id_taken(conn: DbConnection, assistant_id: str) -> bool:
    """Whether any owner's assistant has this id."""
    found = await conn.execute(sa.select(assistants.c.id).where(assistants.c.id == assistant_id))
    return found.first() is not None


async def insert_assistant(
    conn: DbConnection,
    owner: Principal,
    assistant_id: str,
    given: AssistantFields,
    *,
    now: datetime,
) -> AssistantRecord:
    """A new assistant at version 1 (a taken id raises the database's duplicate-key error)."""
    values = _fields_of(given)
    await conn.execute(
        assistants.insert().values(
            id=assistant_id,
            tenant=owner.tenant,
            user_id=owner.user,
            version=1,
            created_at=now,
            updated_at=now,
            **values,
        )
    )
    await conn.execute(
        assistant_versions.insert().values(
            assistant_id=assistant_id, version=1, created_at=now, **values
        )
    )
    return AssistantRecord(
        id=assistant_id,
        tenant=owner.tenant,
        user_id=owner.user,
        version=1,
        created_at=now,
        updated_at=now,
        **values,
    )


async def get_assistant(
    conn: DbConnection, owner: Principal, assistant_id: str, *, lock: bool = False
) -> AssistantRecord | None:
    """The owner's assistant. ``lock``: for a change in this transaction (PostgreSQL's ``FOR
    UPDATE``: two changes to one assistant take their turns; SQLite has one writer)."""
    query = sa.select(*_COLUMNS).where(_owned(owner), assistants.c.id == assistant_id)
    row = (await conn.execute(query.with_for_update() if lock else query)).first()
    return AssistantRecord(*row) if row is not None else None


async def add_version(
    conn: DbConnection,
    owner: Principal,
    current: AssistantRecord,
    given: AssistantFields,
    *,
    now: datetime,
) -> AssistantRecord:
    """Store ``given`` as the assistant's next version (after its newest) and use it."""
    newest = await conn.execute(
        sa.select(sa.func.max(assistant_versions.c.version)).where(
            assistant_versions.c.assistant_id == current.id
        )
    )
    version = int(newest.scalar_one() or 0) + 1
    values = _fields_of(given)
    await conn.execute(
        assistant_versions.insert().values(
            assistant_id=current.id, version=version, created_at=now, **values
        )
    )
    await conn.execute(
        assistants.update()
        .where(_owned(owner), assistants.c.id == current.id)
        .values(version=version, updated_at=now, **values)
    )
    return _changed(current, values, version=version, now=now)


async def set_version(
    conn: DbConnection, owner: Principal, current: AssistantRecord, version: int, *, now: datetime
) -> AssistantRecord | None:
    """Use the assistant's ``version`` (None: it has no such version)."""
    row = (
        await conn.execute(
            sa.select(*_VERSION_COLUMNS).where(
                assistant_versions.c.assistant_id == current.id,
                assistant_versions.c.version == version,
            )
        )
    ).first()
    if row is None:
        return None
    chosen = AssistantVersionRecord(*row)
    values = _fields_of(chosen)
    await conn.execute(
        assistants.update()
        .where(_owned(owner), assistants.c.id == current.id)
        .values(version=version, updated_at=now, **values)
    )
    return _changed(current, values, version=version, now=now)


async def delete_assistant(conn: DbConnection, owner: Principal, assistant_id: str) -> bool:
    """Delete the owner's assistant and its versions; False when it has none of that id."""
    deleted = await conn.execute(
        assistants.delete().where(_owned(owner), assistants.c.id == assistant_id)
    )
    if not deleted.rowcount:
        return False
    await conn.execute(
        assistant_versions.delete().where(assistant_versions.c.assistant_id == assistant_id)
    )
    return True


def _matching(
    conn: DbConnection,
    owner: Principal,
    graph: str | None,
    name: str | None,
    metadata: Mapping[str, MetadataValue] | None,
) -> sa.Select[Any]:
    query = sa.select(*_COLUMNS).where(_owned(owner))
    if graph is not None:
        query = query.where(assistants.c.graph == graph)
    if name is not None:
        query = query.where(assistants.c.name == name)
    for key, value in (metadata or {}).items():
        query = query.where(metadata_equals(assistants.c.metadata, conn.dialect.name, key, value))
    return query


async def search_assistants(
    conn: DbConnection,
    owner: Principal,
    *,
    graph: str | None,
    name: str | None,
    metadata: Mapping[str, MetadataValue] | None,
    limit: int,
    order_by: Literal["assistant_id", "graph_id", "name", "created_at", "updated_at"],
    descending: bool,
) -> list[AssistantRecord]:
    """The owner's first ``limit`` assistants that match every filter given, in order."""
    column = {
        "assistant_id": assistants.c.id,
        "graph_id": assistants.c.graph,
        "name": assistants.c.name,
        "created_at": assistants.c.created_at,
        "updated_at": assistants.c.updated_at,
    }[order_by]
    query = _matching(conn, owner, graph, name, metadata).order_by(
        column.desc() if descending else column.asc(), assistants.c.id
    )
    return [AssistantRecord(*row) for row in await conn.execute(query.limit(limit))]


async def count_assistants(
    conn: DbConnection,
    owner: Principal,
    *,
    graph: str | None,
    name: str | None,
    metadata: Mapping[str, MetadataValue] | None,
) -> int:
    query = _matching(conn, owner, graph, name, metadata)
    result = await conn.execute(sa.select(sa.func.count()).select_from(query.subquery()))
    return int(result.scalar_one())


async def assistant_versions_of(
    conn: DbConnection,
    assistant_id: str,
    *,
    metadata: Mapping[str, MetadataValue] | None,
    limit: int,
    offset: int,
) -> list[AssistantVersionRecord]:
    """An assistant's versions, newest first (its owner checked by the caller)."""
    query = sa.select(*_VERSION_COLUMNS).where(assistant_versions.c.assistant_id == assistant_id)
    for key, value in (metadata or {}).items():
        query = query.where(
            metadata_equals(assistant_versions.c.metadata, conn.dialect.name, key, value)
        )
    query = query.order_by(assistant_versions.c.version.desc()).limit(limit).offset(offset)
    return [AssistantVersionRecord(*row) for row in await conn.execute(query)]
