"""The cron scheduler: each process that runs graphs sleeps until the earliest tick of any cron
is due, then takes the due ticks.

**Once across replicas.** Every replica wakes for a tick; each takes it with one compare-and-set
of the cron's ``next_run_at`` (from the due time it read to the next tick), in the transaction
that queues the tick's run in its thread's run queue. One commits; the others find the tick gone
and do nothing. The queued run is then an ordinary queued run (``RunQueue``): started by the
first drainer that claims it, stored, audited, replayed like any other. A replica killed between
that commit and the run's start leaves the run waiting in the queue; the next tick of the cron,
on any replica, finds it waiting, starts it and records the tick skipped (``previous_run_waiting``),
so a run is late, never lost or doubled.

**Ticks a person holds.** A tick whose cron's latest thread waits for a consent (its status
``awaiting_consent``) is skipped and audited on that thread (``cron_tick_skipped``), not stacked
behind it; so is one whose previous run has not started yet, and with ``multitask_strategy
"reject"`` one whose thread has an active run. Each tick is either a queued run (``cron_ticked``)
or a skip, both audited on the thread and counted (``consentry_cron_ticks``).

**Missed ticks.** A cron whose tick was due while no process ran (every replica down) runs once
when one starts, and its next tick is the first after that moment: the missed ticks are one run,
not one each.

**Waking.** The sleep ends at the earliest due tick, or earlier when any process creates,
changes or deletes a cron (``storage.crons.CRONS_CHANNEL``, a notification), never on a timer of
its own; at most :data:`MAX_SLEEP_SECONDS` as a safety net for a notification lost while the
listener reconnected (which wakes it too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import NAMESPACE_URL, uuid4, uuid5

from consentry.errors import ConsentryError
from consentry.observability.metrics import Metrics
from consentry.principal import Principal
from consentry.runtime.assistants import Assistants
from consentry.runtime.background import BackgroundLoop
from consentry.runtime.clock import Clock
from consentry.runtime.crons._crons import CronPlan
from consentry.runtime.replicas import EventNotifications
from consentry.runtime.runs import RunQueue, ThreadWriter
from consentry.storage import audit as audit_repo
from consentry.storage import crons as crons_repo
from consentry.storage import run_queue as queue_repo
from consentry.storage import threads as threads_repo
from consentry.storage.crons import CronRecord
from consentry.storage.db.database import Database

__all__ = ["MAX_SLEEP_SECONDS", "CronScheduler", "SkipReason"]

log = logging.getLogger(__name__)

MAX_SLEEP_SECONDS = 300.0
RETRY_SECONDS = 5.0
"""After a pass failed (the database away): try again then."""
STOP_WAIT_SECONDS = 5.0
_BATCH = 100

SkipReason = Literal[
    "consent_pending", "previous_run_waiting", "thread_busy", "assistant_not_found"
]


class CronScheduler(BackgroundLoop):
    def __init__(
        self,
        *,
        db: Database,
        clock: Clock,
        queue: RunQueue,
        threads: ThreadWriter,
        assistants: Assistants,
        notifications: EventNotifications,
        metrics: Metrics,
    ) -> None:
        self._db = db
        self._clock = clock
        self._queue = queue
        self._threads = threads
        self._assistants = assistants
        self._notifications = notifications
        self._metrics = metrics
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="cron-scheduler")

    async def stop(self) -> None:
        """Stop between statements (up to ``STOP_WAIT_SECONDS``): a tick taken is queued."""
        await self._stop_between_passes(STOP_WAIT_SECONDS)
        self._task = None

    async def take_due_ticks(self) -> int:
        """Take every tick due now (those another process takes first excepted); how many this
        process took."""
        taken = 0
        while True:
            async with self._db.read() as conn:
                due = await crons_repo.due_crons(conn, now=self._clock(), limit=_BATCH)
            for cron in due:
                try:
                    taken += await self._take(cron)
                except Exception:  # one cron's failure (the database) does not hold the others
                    log.exception("a cron's tick failed", extra={"cron_id": cron.id})
            if len(due) < _BATCH:
                return taken

    async def _run(self) -> None:
        async with self._notifications.watch_crons() as changed:

            async def one_pass() -> float:
                changed.clear()  # a cron changed from now on wakes the next wait
                await self.take_due_ticks()
                return await self._seconds_to_next_tick()

            async def wait(delay: float) -> None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), delay)

            await self._passes(
                one_pass,
                wait=wait,
                retry_seconds=RETRY_SECONDS,
                failure="the cron scheduler's pass failed",
            )

    async def _seconds_to_next_tick(self) -> float:
        async with self._db.read() as conn:
            due = await crons_repo.next_due_at(conn)
        if due is None:
            return MAX_SLEEP_SECONDS
        wait = (due - self._clock()) / timedelta(seconds=1)
        return min(max(wait, 0.0), MAX_SLEEP_SECONDS)

    async def _take(self, cron: CronRecord) -> int:
        """Take the cron's due tick: queue its run, or skip it; 1 when this process took it."""
        assert cron.next_run_at is not None
        due, now = cron.next_run_at, self._clock()
        plan = CronPlan(cron.schedule, cron.timezone, cron.end_time, cron.enabled)
        following = plan.next_tick(max(now, due))  # (the ticks missed meanwhile: this one)
        owner = cron.owner
        skip = await self._skip_reason(cron)
        if skip is not None:
            return await self._skip(cron, due, following, skip)
        thread_id = cron.thread_id
        if thread_id is None:  # a new thread, named by the tick (so a second taker finds it)
            try:
                graph = (await self._assistants.get(owner, cron.assistant_id)).graph
            except ConsentryError:
                return await self._skip(cron, due, following, "assistant_not_found")
            thread_id = str(uuid5(NAMESPACE_URL, f"consentry-cron/{cron.id}/{due.isoformat()}"))
            await self._threads.create(
                owner,
                thread_id=thread_id,
                metadata={"graph_id": graph, "cron_id": cron.id},
                if_exists="do_nothing",
            )
        run_id = str(uuid4())
        metadata = {**(cron.payload.get("metadata") or {}), "cron_id": cron.id}
        request = {k: v for k, v in cron.payload.items() if k != "multitask_strategy"}
        request["metadata"] = metadata  # (the run's, as a webhook posts it too)
        tick = {"cron_id": cron.id, "due_at": due.isoformat()}
        async with self._db.write() as conn:
            if not await crons_repo.take_tick(
                conn,
                cron.id,
                due_at=due,
                next_run_at=following,
                now=now,
                run_id=run_id,
                thread_id=thread_id,
            ):
                return 0
            await queue_repo.add_queued_run(
                conn,
                owner,
                run_id=run_id,
                thread_id=thread_id,
                request=request,
                metadata=metadata,
                now=now,
            )
            await audit_repo.record_audit(
                conn,
                owner,
                action="cron_ticked",
                thread_id=thread_id,
                run_id=run_id,
                actor="system",
                now=now,
                data=tick,
            )
        self._metrics.cron_ticks.labels(outcome="queued", reason="").inc()
        log.info("a cron's tick queued its run", extra={**tick, "run_id": run_id})
        self._queue.drain(thread_id)
        if cron.thread_id is None and cron.on_run_completed != "keep":
            self._queue.after_end(
                owner, thread_id, run_id, _deleting(self._threads, owner, thread_id)
            )
        return 1

    async def _skip_reason(self, cron: CronRecord) -> SkipReason | None:
        """Why the cron's due tick starts no run, if it does not."""
        async with self._db.read() as conn:
            if cron.last_run_id is not None and cron.last_thread_id is not None:
                last = await queue_repo.queued_run(conn, cron.last_thread_id, cron.last_run_id)
                if last is not None and last.status == "waiting":
                    self._queue.drain(cron.last_thread_id)  # its process may be gone: start it
                    return "previous_run_waiting"
            thread_id = cron.thread_id or cron.last_thread_id
            if thread_id is None or not await threads_repo.thread_id_taken(conn, thread_id):
                return None
            thread = await threads_repo.get_thread(conn, cron.owner, thread_id)
        if thread.status == "awaiting_consent":
            return "consent_pending"
        strategy = cron.payload.get("multitask_strategy")
        if cron.thread_id is not None and thread.status == "running" and strategy == "reject":
            return "thread_busy"
        return None

    async def _skip(
        self, cron: CronRecord, due: datetime, following: datetime | None, reason: SkipReason
    ) -> int:
        now = self._clock()
        tick: dict[str, Any] = {"cron_id": cron.id, "due_at": due.isoformat(), "reason": reason}
        thread_id = cron.thread_id or cron.last_thread_id
        async with self._db.write() as conn:
            if not await crons_repo.take_tick(
                conn, cron.id, due_at=due, next_run_at=following, now=now
            ):
                return 0
            if thread_id is not None and await threads_repo.thread_id_taken(conn, thread_id):
                await audit_repo.record_audit(
                    conn,
                    cron.owner,
                    action="cron_tick_skipped",
                    thread_id=thread_id,
                    actor="system",
                    now=now,
                    data=tick,
                )
        self._metrics.cron_ticks.labels(outcome="skipped", reason=reason).inc()
        log.info("a cron's tick was skipped", extra=tick)
        return 1


def _deleting(
    threads: ThreadWriter, owner: Principal, thread_id: str
) -> Callable[[], Awaitable[None]]:
    """The deletion of a cron's new thread once its run has ended (unless a consent waits)."""

    async def delete() -> None:
        await threads.delete_if_done(owner, thread_id)

    return delete
