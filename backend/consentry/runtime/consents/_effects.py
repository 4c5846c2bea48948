"""The effect ledger a graph receives (``consentry_graphs.consent.EffectLedger``), scoped to one
owner and the run's thread."""

from __future__ import annotations

from typing import Any

from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.storage import effects as repo
from consentry.storage.db.database import Database

__all__ = ["OwnerEffectLedger"]


class OwnerEffectLedger:
    """The ledger of one owner's run on ``thread_id``: an effect is recalled, or allowed, only
    for an approval of that thread that was approved or edited (``storage.effects``)."""

    def __init__(self, db: Database, owner: Principal, clock: Clock, *, thread_id: str) -> None:
        self._db = db
        self._owner = owner
        self._clock = clock
        self._thread_id = thread_id

    async def recall(self, approval_id: str) -> dict[str, Any] | None:
        async with self._db.read() as conn:
            return await repo.recall_effect(
                conn, self._owner, approval_id, thread_id=self._thread_id
            )

    async def remember(self, approval_id: str, kind: str, result: dict[str, Any]) -> None:
        async with self._db.write() as conn:
            await repo.remember_effect(
                conn, approval_id=approval_id, kind=kind, result=result, now=self._clock()
            )
