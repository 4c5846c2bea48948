"""The audit trail: append-only records of every run and consent transition, per thread.

Records are written in the same transaction as the change they describe, so the trail is
complete exactly when the change is; nothing ever updates or deletes them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.schemas.approvals import ApprovalChangeKind
from consentry.schemas.audit import AuditRecord
from consentry.storage.db.database import DbConnection, execute_unread, notify_at_commit
from consentry.storage.db.direct import direct
from consentry.storage.tables import audit

__all__ = [
    "APPROVALS_CHANNEL",
    "APPROVAL_CHANGES",
    "ApprovalChangeRecord",
    "AuditAction",
    "approval_changes",
    "last_approval_change",
    "list_audit",
    "owner_key",
    "record_audit",
]

AuditAction = Literal[
    "run_started",
    "run_ended",
    "consent_requested",
    "consent_decided",
    "consent_expired",
    "consent_cancelled",
    "consent_superseded",
    "state_updated",
    "thread_copied",
    "run_deleted",
    "run_rolled_back",
    "effect_applied",
    "cron_ticked",
    "cron_tick_skipped",
    "error",
]


_INSERT = direct(audit.insert())

APPROVALS_CHANNEL = "consentry_approvals"
"""Notified (payload: ``owner_key``) when one of an owner's approvals changes."""
APPROVAL_CHANGES: dict[AuditAction, ApprovalChangeKind] = {
    "consent_requested": "requested",
    "consent_decided": "decided",
    "consent_expired": "expired",
    "consent_cancelled": "cancelled",
    "consent_superseded": "superseded",
}
"""The audit actions that change an approval, and the change each is on the approvals feed."""


@dataclass(frozen=True, slots=True)
class ApprovalChangeRecord:
    """The audit record of a change to an approval (:func:`approval_changes`)."""

    id: int
    """The approvals feed's cursor."""
    action: AuditAction
    """One of ``APPROVAL_CHANGES``."""
    approval_id: str | None
    created_at: datetime


_CHANGE_COLUMNS = tuple(audit.c[field.name] for field in fields(ApprovalChangeRecord))
"""The columns of an :class:`ApprovalChangeRecord`, in its fields' order (``Record(*row)``)."""


def owner_key(owner: Principal) -> str:
    return f"{owner.tenant}/{owner.user}"


async def record_audit(
    conn: DbConnection,
    owner: Principal,
    *,
    action: AuditAction,
    thread_id: str,
    actor: str,
    now: datetime,
    run_id: str | None = None,
    approval_id: str | None = None,
    data: dict[str, Any] | None = None,
) -> None:
    await execute_unread(
        conn,
        _INSERT,
        {
            "thread_id": thread_id,
            "run_id": run_id,
            "approval_id": approval_id,
            "tenant": owner.tenant,
            "user_id": owner.user,
            "action": action,
            "actor": actor,
            "data": data or {},
            "created_at": now,
        },
    )
    if action in APPROVAL_CHANGES:  # the owner's approvals feeds learn of it at commit
        await notify_at_commit(conn, APPROVALS_CHANNEL, owner_key(owner))


async def list_audit(conn: DbConnection, owner: Principal, thread_id: str) -> list[AuditRecord]:
    rows = await conn.execute(
        audit.select()
        .where(
            audit.c.thread_id == thread_id,
            audit.c.tenant == owner.tenant,
            audit.c.user_id == owner.user,
        )
        .order_by(audit.c.id)
    )
    return [
        AuditRecord(
            seq=row.id,
            action=row.action,
            actor=row.actor,
            run_id=row.run_id,
            approval_id=row.approval_id,
            data=row.data,
            at=row.created_at,
        )
        for row in rows
    ]


def _owners_changes(owner: Principal) -> tuple[sa.ColumnElement[bool], ...]:
    return (
        audit.c.tenant == owner.tenant,
        audit.c.user_id == owner.user,
        audit.c.action.in_(tuple(APPROVAL_CHANGES)),
    )


async def last_approval_change(conn: DbConnection, owner: Principal) -> int:
    """The cursor of the owner's newest approval change (0: none yet)."""
    found = await conn.scalar(sa.select(sa.func.max(audit.c.id)).where(*_owners_changes(owner)))
    return int(found or 0)


async def approval_changes(
    conn: DbConnection, owner: Principal, *, after: int, since: datetime | None = None
) -> list[ApprovalChangeRecord]:
    """The owner's approval changes after cursor ``after`` (and, with ``since``, every one
    recorded since then), oldest first."""
    newer = audit.c.id > after
    if since is not None:
        newer = sa.or_(newer, audit.c.created_at >= since)
    rows = await conn.execute(
        sa.select(*_CHANGE_COLUMNS).where(*_owners_changes(owner), newer).order_by(audit.c.id)
    )
    return [ApprovalChangeRecord(*row) for row in rows]
