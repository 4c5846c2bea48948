"""The effects ledger: one row per approval whose effect ran, with its result."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from backend.principal import Principal
from backend.storage.tables import approvals, effects

__all__ = ["recall_effect", "remember_effect"]


async def recall_effect(
    conn: AsyncConnection, owner: Principal, approval_id: str
) -> dict[str, Any] | None:
    """The recorded result of the effect behind one of the owner's approvals, if it ran."""
    found = await conn.scalar(
        sa.select(effects.c.result)
        .join(approvals, approvals.c.id == effects.c.approval_id)
        .where(
            effects.c.approval_id == approval_id,
            approvals.c.tenant == owner.tenant,
            approvals.c.user_id == owner.user,
        )
    )
    return dict(found) if found is not None else None


async def remember_effect(
    conn: AsyncConnection, *, approval_id: str, kind: str, result: dict[str, Any], now: datetime
) -> None:
    await conn.execute(
        effects.insert().values(approval_id=approval_id, kind=kind, result=result, created_at=now)
    )
