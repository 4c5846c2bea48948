"""Reading approvals: one of an owner's, a thread's pending ones (or both in one statement), a
thread's closed ones, an owner's page of them and how many wait, and the pending ones past (or
nearest to) their deadline for the expiry sweeper."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.schemas.approvals import ApprovalStatus
from consentry.storage.approvals._records import (
    _COLUMNS,
    _SELECT,
    ApprovalRecord,
    _owned,
    live_at,
)
from consentry.storage.db.database import DbConnection, execute
from consentry.storage.db.direct import direct
from consentry.storage.tables import approvals, threads

_FIND = direct(
    _SELECT.where(
        approvals.c.id == sa.bindparam("p_id"),
        approvals.c.tenant == sa.bindparam("p_tenant"),
        approvals.c.user_id == sa.bindparam("p_user"),
    )
)
_PENDING = direct(
    _SELECT.where(
        approvals.c.thread_id == sa.bindparam("p_thread"), approvals.c.status == "pending"
    ).order_by(approvals.c.created_at)
)
_ASKED = sa.and_(
    approvals.c.id == sa.bindparam("p_id"),
    approvals.c.tenant == sa.bindparam("p_tenant"),
    approvals.c.user_id == sa.bindparam("p_user"),
)
_FIND_WITH_PENDING = direct(
    sa.select(*_COLUMNS, _ASKED.label("asked"))
    .where(
        sa.or_(
            _ASKED,
            sa.and_(
                approvals.c.thread_id == sa.bindparam("p_thread"), approvals.c.status == "pending"
            ),
        )
    )
    .order_by(approvals.c.created_at)
)


async def existing_approval_ids(conn: DbConnection, ids: Sequence[str]) -> set[str]:
    rows = await conn.execute(sa.select(approvals.c.id).where(approvals.c.id.in_(ids)))
    return {row.id for row in rows}


async def find_approval(
    conn: DbConnection, owner: Principal, approval_id: str
) -> ApprovalRecord | None:
    params = {"p_id": approval_id, "p_tenant": owner.tenant, "p_user": owner.user}
    row = (await execute(conn, _FIND, params)).first()
    return None if row is None else ApprovalRecord(*row)


async def pending_approvals(conn: DbConnection, thread_id: str) -> list[ApprovalRecord]:
    rows = await execute(conn, _PENDING, {"p_thread": thread_id})
    return [ApprovalRecord(*row) for row in rows]


async def find_with_pending(
    conn: DbConnection, owner: Principal, approval_id: str, thread_id: str
) -> tuple[ApprovalRecord | None, list[ApprovalRecord]]:
    """:func:`find_approval` and :func:`pending_approvals` in one statement (a decision reads
    both: one round trip instead of two on PostgreSQL)."""
    params = {
        "p_id": approval_id,
        "p_tenant": owner.tenant,
        "p_user": owner.user,
        "p_thread": thread_id,
    }
    found: ApprovalRecord | None = None
    pending: list[ApprovalRecord] = []
    for *columns, asked in await execute(conn, _FIND_WITH_PENDING, params):
        row = ApprovalRecord(*columns)
        if asked:
            found = row
        if row.thread_id == thread_id and row.status == "pending":
            pending.append(row)
    return found, pending


async def closed_approvals(
    conn: DbConnection, thread_id: str, ids: Sequence[str]
) -> list[ApprovalRecord]:
    """The thread's approvals of these interrupt ``ids`` (a reviewed batch's ``<id>-<n>`` too)
    that were decided or expired."""
    rows = await conn.execute(
        _SELECT.where(
            approvals.c.thread_id == thread_id,
            sa.or_(approvals.c.id.in_(ids), *(approvals.c.id.startswith(f"{i}-") for i in ids)),
            approvals.c.status.in_(("approved", "edited", "rejected", "answered", "expired")),
        )
    )
    return [ApprovalRecord(*row) for row in rows]


async def list_approvals(
    conn: DbConnection,
    owner: Principal,
    *,
    status: ApprovalStatus | None,
    limit: int,
    before: tuple[datetime, str] | None,
) -> list[ApprovalRecord]:
    """The owner's approvals, newest first; ``before`` is the (created_at, id) of the last row
    of the previous page."""
    query = _SELECT.where(_owned(owner))
    if status is not None:
        query = query.where(approvals.c.status == status)
    if before is not None:
        created_at, approval_id = before
        query = query.where(
            sa.or_(
                approvals.c.created_at < created_at,
                sa.and_(approvals.c.created_at == created_at, approvals.c.id < approval_id),
            )
        )
    rows = await conn.execute(
        query.order_by(approvals.c.created_at.desc(), approvals.c.id.desc()).limit(limit)
    )
    return [ApprovalRecord(*row) for row in rows]


async def due_approvals(
    conn: DbConnection, *, now: datetime, limit: int, graphs: Sequence[str]
) -> list[ApprovalRecord]:
    """Pending approvals past their deadline, of every owner, on threads of the served
    ``graphs`` (for the expiry sweeper)."""
    rows = await conn.execute(
        _SELECT.join(threads, threads.c.id == approvals.c.thread_id)
        .where(
            approvals.c.status == "pending",
            approvals.c.expires_at <= now,
            threads.c.graph.in_(graphs),
        )
        .order_by(approvals.c.expires_at)
        .limit(limit)
    )
    return [ApprovalRecord(*row) for row in rows]


async def next_expiry(conn: DbConnection, *, graphs: Sequence[str]) -> datetime | None:
    """The earliest deadline among pending approvals on threads of the served ``graphs``."""
    found: datetime | None = await conn.scalar(
        sa.select(sa.func.min(approvals.c.expires_at))
        .join(threads, threads.c.id == approvals.c.thread_id)
        .where(approvals.c.status == "pending", threads.c.graph.in_(graphs))
    )
    return found


async def count_pending(conn: DbConnection, owner: Principal, *, now: datetime) -> int:
    """How many of the owner's consents wait for a decision (and have not expired)."""
    found = await conn.scalar(
        sa.select(sa.func.count())
        .select_from(approvals)
        .where(
            approvals.c.tenant == owner.tenant,
            approvals.c.user_id == owner.user,
            approvals.c.status == "pending",
            live_at(now),
        )
    )
    return int(found or 0)
