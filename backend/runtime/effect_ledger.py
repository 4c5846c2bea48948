"""The effect ledger a graph receives (``graphs.consent.EffectLedger``), scoped to one owner."""

from __future__ import annotations

from typing import Any

from backend.principal import Principal
from backend.runtime.clock import Clock
from backend.storage import effects as repo
from backend.storage.database import Database

__all__ = ["OwnerEffectLedger"]


class OwnerEffectLedger:
    def __init__(self, db: Database, owner: Principal, clock: Clock) -> None:
        self._db = db
        self._owner = owner
        self._clock = clock

    async def recall(self, approval_id: str) -> dict[str, Any] | None:
        async with self._db.read() as conn:
            return await repo.recall_effect(conn, self._owner, approval_id)

    async def remember(self, approval_id: str, kind: str, result: dict[str, Any]) -> None:
        async with self._db.write() as conn:
            await repo.remember_effect(
                conn, approval_id=approval_id, kind=kind, result=result, now=self._clock()
            )
