"""Approval records: one per consent request. Every transition is a compare-and-set on
``status`` (``pending → approved | edited | rejected | answered | expired | cancelled``), so
exactly one decision, expiry or cancellation wins however many race for it. A consent with no
deadline (``expires_at`` null: a raw ``interrupt()`` when no TTL is configured) never expires.

A decided row's ``decision`` JSON is the value the graph is resumed with (``ConsentDecision``
of ``graphs/consentry_graphs/consent.py``), plus ``decided_by_name``: the decider's display name at
decision time (``CONSENTRY_API_KEYS`` ``token=tenant:user:Display Name``), kept beside
``decided_by`` for people to read. :func:`recorded_decision` takes it out again: the graph never
sees it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.schemas.approvals import (
    Approval,
    ApprovalStatus,
    RecordedDecision,
)
from consentry.schemas.events import ConsentEvent
from consentry.storage.database import DbConnection, execute, execute_unread
from consentry.storage.direct import direct
from consentry.storage.tables import UTCDateTime, approvals, threads

__all__ = [
    "DECIDED_BY_NAME",
    "ApprovalRecord",
    "cancel_approval",
    "cancel_run_approvals",
    "closed_approvals",
    "count_pending",
    "decide_approval",
    "due_approvals",
    "existing_approval_ids",
    "expire_approval",
    "find_approval",
    "find_with_pending",
    "insert_approval",
    "list_approvals",
    "live_at",
    "next_expiry",
    "pending_approvals",
    "recorded_decision",
    "reopen_approval",
    "to_approval",
]

DECIDED_BY_NAME = "decided_by_name"


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """An approval's row, as stored (``tables.approvals``)."""

    id: str
    thread_id: str
    run_id: str
    tenant: str
    user_id: str
    kind: str
    status: ApprovalStatus
    event: dict[str, Any]
    """The ``consent`` event that asked, as sent (``ConsentEvent``, JSON)."""
    created_at: datetime
    expires_at: datetime | None
    """None: no deadline."""
    decided_at: datetime | None
    decided_by: str | None
    decision: dict[str, Any] | None
    """The graph's resume value, with ``decided_by_name`` (see the module's docstring)."""
    proposal_hash: str
    edited: dict[str, Any] | None
    comment: str | None


_COLUMNS = tuple(approvals.c[field.name] for field in fields(ApprovalRecord))
"""The columns of an :class:`ApprovalRecord`, in its fields' order: a row of them is
``ApprovalRecord(*row)`` (by position: a quarter of the cost by name, see ``storage.events``)."""
_SELECT = sa.select(*_COLUMNS)
_INSERT = direct(approvals.insert())
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


def live_at(now: datetime | sa.BindParameter[datetime]) -> sa.ColumnElement[bool]:
    """Not past its deadline at ``now`` (a consent without one never is)."""
    return sa.or_(approvals.c.expires_at.is_(None), approvals.c.expires_at > now)


_DECIDE = direct(
    approvals.update()
    .where(
        approvals.c.id == sa.bindparam("p_id"),
        approvals.c.status == "pending",
        live_at(sa.bindparam("p_now", type_=UTCDateTime)),
    )
    .values(
        status=sa.bindparam("p_status"),
        decided_by=sa.bindparam("p_by"),
        decision=sa.bindparam("p_decision", type_=sa.JSON),
        edited=sa.bindparam("p_edited", type_=sa.JSON),
        comment=sa.bindparam("p_comment"),
        decided_at=sa.bindparam("p_now", type_=UTCDateTime),
    )
)


def _owned(owner: Principal) -> sa.ColumnElement[bool]:
    return sa.and_(approvals.c.tenant == owner.tenant, approvals.c.user_id == owner.user)


def to_approval(row: ApprovalRecord) -> Approval:
    event = row.event
    decided = None
    if row.status != "pending":
        recorded = row.decision or {}
        decided = RecordedDecision(
            status=row.status,
            decision=recorded.get("decision"),
            decided_by=row.decided_by,
            decided_by_name=recorded.get(DECIDED_BY_NAME),
            decided_at=row.decided_at,
            edited=row.edited,
            value=recorded.get("value"),
            comment=row.comment,
        )
    return Approval(
        approval_id=row.id,
        thread_id=row.thread_id,
        run_id=row.run_id,
        kind=row.kind,
        title=event["title"],
        proposal=event["proposal"],
        proposal_hash=row.proposal_hash,
        allowed_decisions=event["allowed_decisions"],
        interrupt_id=event.get("interrupt_id") or row.id,
        value=event.get("value"),
        response_schema=event.get("response_schema"),
        created_at=row.created_at,
        expires_at=row.expires_at,
        status=row.status,
        decided=decided,
    )


def recorded_decision(row: ApprovalRecord) -> dict[str, Any] | None:
    """The recorded decision (a ``ConsentDecision``, without the decider's name)."""
    if not row.decision:
        return None
    return {key: value for key, value in row.decision.items() if key != DECIDED_BY_NAME}


async def insert_approval(
    conn: DbConnection,
    owner: Principal,
    event: ConsentEvent,
    *,
    proposal_hash: str,
    now: datetime,
) -> None:
    """Nobody reads its result: it goes with the transaction's next statement or its commit
    (``database.execute_unread``); a conflict fails the transaction there."""
    await execute_unread(
        conn,
        _INSERT,
        {
            "id": event.approval_id,
            "thread_id": event.thread_id,
            "run_id": event.run_id,
            "tenant": owner.tenant,
            "user_id": owner.user,
            "kind": event.kind,
            "status": "pending",
            "event": event.model_dump(mode="json"),
            "proposal_hash": proposal_hash,
            "created_at": now,
            "expires_at": event.expires_at,
        },
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


async def decide_approval(
    conn: DbConnection,
    approval_id: str,
    *,
    status: ApprovalStatus,
    decided_by: str,
    decided_by_name: str | None = None,
    decision: dict[str, Any],
    now: datetime,
) -> bool:
    """``pending → status`` unless expired; False when somebody else decided first.
    ``decided_by_name`` is stored beside the decision (see the module's docstring)."""
    result = await execute(
        conn,
        _DECIDE,
        {
            "p_id": approval_id,
            "p_now": now,
            "p_status": status,
            "p_by": decided_by,
            "p_decision": {**decision, DECIDED_BY_NAME: decided_by_name},
            "p_edited": decision.get("edited"),
            "p_comment": decision.get("comment"),
        },
    )
    return result.rowcount == 1


async def expire_approval(conn: DbConnection, approval_id: str, *, now: datetime) -> bool:
    """``pending → expired`` once its deadline passed; False when it was decided first."""
    result = await conn.execute(
        approvals.update()
        .where(
            approvals.c.id == approval_id,
            approvals.c.status == "pending",
            approvals.c.expires_at <= now,
        )
        .values(
            status="expired",
            decided_by="system",
            decision={
                "approval_id": approval_id,
                "decision": "expire",
                "edited": None,
                "comment": None,
                "decided_by": "system",
            },
            decided_at=now,
        )
    )
    return result.rowcount == 1


async def reopen_approval(conn: DbConnection, approval_id: str) -> bool:
    """``answered → pending``: the graph raised on the answer and still waits for one."""
    result = await conn.execute(
        approvals.update()
        .where(approvals.c.id == approval_id, approvals.c.status == "answered")
        .values(
            status="pending",
            decided_by=None,
            decided_at=None,
            decision=None,
            edited=None,
            comment=None,
        )
    )
    return result.rowcount == 1


async def cancel_approval(conn: DbConnection, approval_id: str, *, now: datetime) -> bool:
    """``pending → cancelled``: the graph no longer waits for it."""
    result = await conn.execute(
        approvals.update()
        .where(approvals.c.id == approval_id, approvals.c.status == "pending")
        .values(status="cancelled", decided_by="system", decided_at=now)
    )
    return result.rowcount == 1


async def cancel_run_approvals(conn: DbConnection, run_id: str, *, now: datetime) -> int:
    """The pending approvals a cancelled run asked for become ``cancelled``."""
    result = await conn.execute(
        approvals.update()
        .where(approvals.c.run_id == run_id, approvals.c.status == "pending")
        .values(status="cancelled", decided_by="system", decided_at=now)
    )
    return result.rowcount


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
