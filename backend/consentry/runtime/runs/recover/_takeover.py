"""Taking over the runs of dead replicas (PostgreSQL, several processes).

A replica that dies leaves its runs ``running`` under leases nobody renews. Every live replica
sleeps until the earliest lease among running threads expires (at most a third of the lease, so a
lease written meanwhile is not missed), then closes the runs whose lease expired and continues
them from their last checkpoint, as the start-up recovery does: one compare-and-set on the run's
fencing token decides which replica gets each run. On SQLite there is one process, which
recovers everything at start-up: no timer runs.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta
from typing import Protocol

from consentry.runtime.background import BackgroundLoop
from consentry.runtime.clock import Clock
from consentry.storage import leases as leases_repo
from consentry.storage.db.database import Database

__all__ = ["DeadRunTaker", "RunTakeover"]

log = logging.getLogger(__name__)
MIN_SLEEP_SECONDS = 0.2


class DeadRunTaker(Protocol):
    """Who closes and continues dead runs (the run service)."""

    async def take_over_dead_runs(self, *, lease_expired_by: datetime | None) -> int: ...


class RunTakeover(BackgroundLoop):
    def __init__(
        self,
        *,
        db: Database,
        runs: DeadRunTaker,
        clock: Clock,
        lease_seconds: float,
    ) -> None:
        self._db = db
        self._runs = runs
        self._clock = clock
        self._max_sleep = lease_seconds / 3

    async def sweep(self) -> int:
        """Take over every run whose lease expired; how many this replica got."""
        taken = await self._runs.take_over_dead_runs(lease_expired_by=self._clock())
        if taken:
            log.warning("took over %d run(s) of a replica that stopped", taken)
        return taken

    async def _seconds_to_next_expiry(self) -> float:
        async with self._db.read() as conn:
            earliest = await leases_repo.earliest_lease_expiry(conn)
        if earliest is None:
            return self._max_sleep
        wait = (earliest - self._clock()) / timedelta(seconds=1)
        return min(max(wait, MIN_SLEEP_SECONDS), self._max_sleep)

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.sleep(await self._seconds_to_next_expiry())
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database is away: try again after a while
                log.exception("run takeover sweep failed")
                await asyncio.sleep(self._max_sleep)

    def start(self) -> None:
        self._start(self._run, name="run-takeover")

    async def stop(self) -> None:
        await self._cancel()
