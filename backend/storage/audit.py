"""The audit trail: append-only records of every run and consent transition, per thread.

Records are written in the same transaction as the change they describe, so the trail is
complete exactly when the change is; nothing ever updates or deletes them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from backend.principal import Principal
from backend.schemas.audit import AuditRecord
from backend.storage.database import DbConnection, execute_unread
from backend.storage.tables import audit

__all__ = ["AuditAction", "list_audit", "record_audit"]

AuditAction = Literal[
    "run_started",
    "run_ended",
    "consent_requested",
    "consent_decided",
    "consent_expired",
    "consent_cancelled",
    "effect_applied",
    "error",
]


_INSERT = audit.insert()


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
