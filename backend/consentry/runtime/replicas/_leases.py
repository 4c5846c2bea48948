"""Run leases: this process's heartbeat on the runs it executes.

A run's claim leases its thread to this process until ``now + lease_seconds`` and gives it a new
fencing token (``storage.leases``). While the run lasts, one heartbeat per process renews the
leases of all its runs every third of the lease, in one statement. A run whose lease was taken
over (the process stalled past its lease and another took the run) is stopped; so is every run
whose lease could not be renewed for two thirds of the lease (the database is unreachable), before
anyone else may take it over (on PostgreSQL: on SQLite, one process on the file, nobody else can,
and a run goes on through its database's trouble). Writes a stopped run might still attempt fail
on its fencing token.

The heartbeat sleeps while the process has no run: no timer, no query.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from datetime import datetime, timedelta
from time import monotonic
from uuid import uuid4

from consentry.runtime.clock import Clock
from consentry.storage import leases as leases_repo
from consentry.storage.db.database import Database

__all__ = ["LeaseKeeper", "process_identity"]

log = logging.getLogger(__name__)


def process_identity() -> str:
    """Who holds a lease: host, process id and a random part (a restarted process with a reused
    pid is somebody else)."""
    return f"{socket.gethostname()[:32]}:{os.getpid()}:{uuid4().hex[:8]}"


class LeaseKeeper:
    def __init__(
        self,
        *,
        db: Database,
        clock: Clock,
        lease_seconds: float,
        on_lost: Callable[[set[str]], None],
        owner: str | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._lease = lease_seconds
        self._on_lost = on_lost
        self.owner = owner or process_identity()
        self._confirmed: dict[str, float] = {}
        """Run id → when (monotonic) its lease was last known to be held."""
        self._has_runs = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def expires_at(self, now: datetime) -> datetime:
        return now + timedelta(seconds=self._lease)

    def track(self, run_id: str) -> None:
        """A run was claimed (its lease just written)."""
        self._confirmed[run_id] = monotonic()
        self._has_runs.set()
        if self._task is None:
            self._task = asyncio.create_task(self._beat(), name="lease-heartbeat")

    def forget(self, run_id: str) -> None:
        """A run ended (its lease released with it)."""
        self._confirmed.pop(run_id, None)
        if not self._confirmed:
            self._has_runs.clear()

    async def renew(self) -> None:
        """One heartbeat: renew every lease this process holds, stop runs that lost theirs."""
        run_ids = list(self._confirmed)
        if not run_ids:
            return
        started = monotonic()
        try:
            async with self._db.lease_write() as conn:
                held = await leases_repo.renew_leases(
                    conn,
                    lease_owner=self.owner,
                    run_ids=run_ids,
                    expires_at=self.expires_at(self._clock()),
                )
        except Exception:
            log.exception("could not renew run leases")
            if self._db.is_postgres:  # (on SQLite no other process can take a run over)
                deadline = started - self._lease * 2 / 3
                self._stop({r for r in run_ids if self._confirmed.get(r, started) < deadline})
            return
        for run_id in held:
            if run_id in self._confirmed:
                self._confirmed[run_id] = started
        # A run that ended while the statement ran released its lease itself: not lost.
        self._stop({r for r in run_ids if r not in held and r in self._confirmed})

    def _stop(self, lost: set[str]) -> None:
        if not lost:
            return
        log.warning("runs lost their lease and stop", extra={"run_ids": sorted(lost)})
        for run_id in lost:
            self._confirmed.pop(run_id, None)
        if not self._confirmed:
            self._has_runs.clear()
        self._on_lost(lost)

    async def _beat(self) -> None:
        while True:
            await self._has_runs.wait()
            await asyncio.sleep(self._lease / 3)
            await self.renew()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
