"""Projects: an owner's folders of notes, and the one default project each owner gets on first use.

Every function takes the caller's :class:`Principal` and only ever sees that owner's rows: another
owner's id behaves exactly like an unknown id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import uuid4

import sqlalchemy as sa

from consentry.errors import NotFoundError
from consentry.principal import Principal
from consentry.storage.db.database import DbConnection
from consentry.storage.db.dialect import insert
from consentry.storage.db.direct import direct
from consentry.storage.tables import projects

__all__ = [
    "DEFAULT_PROJECT_NAME",
    "ProjectRecord",
    "create_default_project",
    "create_project",
    "default_project_id",
    "find_default_project_id",
    "get_project",
    "list_projects",
]

DEFAULT_PROJECT_NAME = "My notes"


@dataclass(frozen=True, slots=True)
class ProjectRecord:
    """A stored project (the wire model is :class:`consentry.schemas.notes.Project`)."""

    project_id: str
    name: str
    is_default: bool
    created_at: datetime


def _project(row: sa.Row[Any]) -> ProjectRecord:
    return ProjectRecord(
        project_id=row.id, name=row.name, is_default=row.is_default, created_at=row.created_at
    )


async def create_project(
    conn: DbConnection, owner: Principal, *, name: str, now: datetime, is_default: bool = False
) -> ProjectRecord:
    project = ProjectRecord(
        project_id=str(uuid4()), name=name, is_default=is_default, created_at=now
    )
    await conn.execute(
        projects.insert().values(
            id=project.project_id,
            tenant=owner.tenant,
            user_id=owner.user,
            name=name,
            is_default=is_default,
            created_at=now,
        )
    )
    return project


async def list_projects(conn: DbConnection, owner: Principal) -> list[ProjectRecord]:
    rows = await conn.execute(
        projects.select()
        .where(projects.c.tenant == owner.tenant, projects.c.user_id == owner.user)
        .order_by(projects.c.created_at)
    )
    return [_project(row) for row in rows]


# Read by every note a graph writes and every message that names no project: built and compiled
# once (``storage.db.direct``).
_OWNED_PROJECT = direct(
    projects.select().where(
        projects.c.id == sa.bindparam("p_id"),
        projects.c.tenant == sa.bindparam("p_tenant"),
        projects.c.user_id == sa.bindparam("p_user"),
    )
)
_DEFAULT_PROJECT = direct(
    sa.select(projects.c.id).where(
        projects.c.tenant == sa.bindparam("p_tenant"),
        projects.c.user_id == sa.bindparam("p_user"),
        projects.c.is_default,
    )
)


async def get_project(conn: DbConnection, owner: Principal, project_id: str) -> ProjectRecord:
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
