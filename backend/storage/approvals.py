"""Approval records: one per consent request, decided at most once (compare-and-set)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from backend.principal import Principal
from backend.schemas.events import ConsentEvent
from backend.storage.tables import approvals

__all__ = [
    "decide_approval",
    "expire_approvals",
    "find_approval",
    "insert_approval",
    "pending_approvals",
]


async def insert_approval(
    conn: AsyncConnection, owner: Principal, event: ConsentEvent, *, now: datetime
) -> None:
    await conn.execute(
        approvals.insert().values(
            id=event.approval_id,
            thread_id=event.thread_id,
            run_id=event.run_id,
            tenant=owner.tenant,
            user_id=owner.user,
            kind=event.kind,
            status="pending",
            event=event.model_dump(mode="json"),
            created_at=now,
            expires_at=event.expires_at,
        )
    )


async def find_approval(
    conn: AsyncConnection, owner: Principal, approval_id: str
) -> sa.Row[Any] | None:
    return (
        await conn.execute(
            approvals.select().where(
                approvals.c.id == approval_id,
                approvals.c.tenant == owner.tenant,
                approvals.c.user_id == owner.user,
            )
        )
    ).first()


async def pending_approvals(conn: AsyncConnection, thread_id: str) -> list[sa.Row[Any]]:
    rows = await conn.execute(
        approvals.select()
        .where(
            approvals.c.thread_id == thread_id,
            approvals.c.status == "pending",
        )
        .order_by(approvals.c.created_at)
    )
    return list(rows)


async def decide_approval(
    conn: AsyncConnection,
    approval_id: str,
    *,
    status: str,
    decided_by: str,
    decision: dict[str, Any],
    now: datetime,
) -> bool:
    """``pending`` → ``status``; False when it was no longer pending (someone decided first)."""
    result = await conn.execute(
        approvals.update()
        .where(
            approvals.c.id == approval_id,
            approvals.c.status == "pending",
            approvals.c.expires_at > now,
        )
        .values(status=status, decided_by=decided_by, decision=decision, decided_at=now)
    )
    return result.rowcount == 1


async def expire_approvals(conn: AsyncConnection, thread_id: str, *, now: datetime) -> int:
    """Mark the thread's overdue pending approvals ``expired``; return how many."""
    result = await conn.execute(
        approvals.update()
        .where(
            approvals.c.thread_id == thread_id,
            approvals.c.status == "pending",
            approvals.c.expires_at <= now,
        )
        .values(status="expired", decided_at=now)
    )
    return result.rowcount
