"""The expiry sweeper: a durable timer for consent deadlines.

It sleeps until the earliest deadline among pending consents (or until a new consent is asked,
which may expire sooner), then expires every overdue consent exactly once (a compare-and-set that
a racing decision may win instead) and resumes its graph down the expired path; that run ends with
``final`` reason ``expired``. Consents that expired while no server ran are swept at start-up. No
polling: between deadlines it sleeps, at most an hour, which is also when it prunes idempotency
keys past their retention, stored events past theirs (and the settled webhook posts with them),
and the Store's expired items.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Protocol

from consentry.principal import Principal
from consentry.runtime.background import BackgroundLoop
from consentry.runtime.clock import Clock
from consentry.runtime.consents._alarm import ExpiryAlarm
from consentry.storage import approvals as approvals_repo
from consentry.storage import events as events_repo
from consentry.storage import webhooks as webhooks_repo
from consentry.storage.approvals import ApprovalRecord
from consentry.storage.db.database import Database
from consentry.storage.idempotency import prune_idempotency_keys
from consentry.storage.store import delete_expired

__all__ = ["Expirer", "ExpirySweeper"]


class Expirer(Protocol):
    """What takes an overdue consent's graph down its expired path (``runs.RunService``): True
    when a run started (nobody listens to it; its events are stored), False when a decision won
    the race or the thread is busy (the next sweep tries again)."""

    async def expire(self, owner: Principal, row: ApprovalRecord) -> bool: ...


log = logging.getLogger(__name__)
MAX_SLEEP_SECONDS = 3600.0
BUSY_RETRY_SECONDS = 1.0
BATCH = 100
PRUNE_BATCH = 500
"""Settled webhook posts deleted per transaction (a short write each, however many are due)."""
STOP_WAIT_SECONDS = 5.0


class ExpirySweeper(BackgroundLoop):
    def __init__(
        self,
        *,
        db: Database,
        runs: Expirer,
        alarm: ExpiryAlarm,
        clock: Clock,
        key_retention: timedelta,
        event_retention: timedelta,
        kept_output_retention: timedelta,
        graphs: list[str],
    ) -> None:
        self._event_retention = event_retention
        self._kept_output_retention = kept_output_retention
        self._db = db
        self._graphs = graphs
        """Threads of graphs no longer served are left alone (their consents wait)."""
        self._runs = runs
        self._clock = clock
        self._key_retention = key_retention
        self._alarm = alarm
        self._task: asyncio.Task[None] | None = None
        self._sweeping = asyncio.Lock()
        """One sweep at a time per process: a sweep asked for while one runs waits for it (so the
        runs it started have been launched when it returns) instead of racing it."""

    async def sweep(self) -> int:
        """Expire every overdue consent now; return how many expired (their runs go on)."""
        async with self._sweeping:
            return await self._sweep()

    async def _sweep(self) -> int:
        expired = 0
        while True:
            async with self._db.read() as conn:
                due = await approvals_repo.due_approvals(
                    conn, now=self._clock(), limit=BATCH, graphs=self._graphs
                )
            started = 0
            for row in due:
                try:
                    if await self._runs.expire(Principal(row.tenant, row.user_id), row):
                        started += 1
                except Exception:
                    log.exception("could not expire a consent", extra={"approval_id": row.id})
            expired += started
            if len(due) < BATCH or started == 0:
                return expired

    async def prune_idempotency_keys(self) -> int:
        """Forget idempotency keys older than their retention (at least 24 hours)."""
        async with self._db.write(offload=True) as conn:  # may be long: off the loop's thread
            return await prune_idempotency_keys(
                conn, older_than=self._clock() - self._key_retention
            )

    async def prune_events(self) -> int:
        """Forget stored events older than their retention (clients then get a ``resync``), and
        the graph outputs kept with them older than theirs (a join then replays the events)."""
        now = self._clock()
        async with self._db.write(offload=True) as conn:  # may be long: off the loop's thread
            await events_repo.forget_kept_outputs(
                conn, older_than=now - self._kept_output_retention
            )
            return await events_repo.prune_events(conn, older_than=now - self._event_retention)

    async def prune_webhook_deliveries(self) -> int:
        """Forget the webhook posts settled (``delivered``, ``failed``) longer ago than the
        event retention, :data:`PRUNE_BATCH` per transaction; how many."""
        settled_before = self._clock() - self._event_retention
        pruned = 0
        while True:
            async with self._db.write() as conn:
                batch = await webhooks_repo.prune_settled_deliveries(
                    conn, settled_before=settled_before, limit=PRUNE_BATCH
                )
            pruned += batch
            if batch < PRUNE_BATCH:
                return pruned

    async def prune_store_items(self) -> int:
        """Delete the Store's expired items (never read since they expired)."""
        async with self._db.write(offload=True) as conn:  # may be long: off the loop's thread
            return await delete_expired(conn, now=self._clock())

    async def _seconds_to_next_deadline(self) -> float:
        async with self._db.read() as conn:
            deadline = await approvals_repo.next_expiry(conn, graphs=self._graphs)
        if deadline is None:
            return MAX_SLEEP_SECONDS
        seconds = (deadline - self._clock()).total_seconds()
        # An overdue consent still pending has a busy thread: look again shortly.
        return BUSY_RETRY_SECONDS if seconds <= 0 else min(seconds, MAX_SLEEP_SECONDS)

    async def _run(self) -> None:
        async def one_pass() -> float:
            self._alarm.planned = None  # a consent asked during this pass rings for the next
            await self.sweep()
            await self.prune_idempotency_keys()
            await self.prune_events()
            await self.prune_webhook_deliveries()
            await self.prune_store_items()
            return await self._seconds_to_next_deadline()

        async def wait(delay: float) -> None:
            self._alarm.planned = self._clock() + timedelta(seconds=delay)
            await self._alarm.wait(delay)

        await self._passes(
            one_pass,
            wait=wait,
            retry_seconds=BUSY_RETRY_SECONDS,
            failure="expiry sweep failed; retrying",
        )

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="consent-expiry-sweeper")

    async def stop(self) -> None:
        """Stop between statements (up to ``STOP_WAIT_SECONDS``); the wait for the next
        deadline is cancelled."""
        await self._stop_between_passes(STOP_WAIT_SECONDS)
