"""The cron scheduler: each process that runs graphs sleeps until the earliest tick of any cron
is due, then takes the due ticks.

**Once across replicas.** Every replica wakes for a tick; each takes it in one transaction that
first moves the cron's ``next_run_at`` on with a compare-and-set (from the due time it read, and
only if the cron was not changed since: a client's change wins, and the tick is taken again as
the cron now says), then reads whether the tick is to be skipped and queues the tick's run in its
thread's run queue (a cron without a thread gets the tick's thread in that transaction too). One
replica commits; the others find the tick gone and do nothing. The queued run is then an
ordinary queued run (``RunQueue``): started by the first drainer that claims it, stored, audited,
replayed like any other. A replica killed between that commit and the run's start leaves the run
waiting in the queue: any scheduler's next pass after a run lease starts it (a pass comes at the
next tick of any cron, at most :data:`MAX_SLEEP_SECONDS` later), so a run is late, never lost.

**Ticks a person holds.** A tick whose cron's latest thread waits for a consent (its status
``awaiting_consent``) is skipped and audited on that thread (``cron_tick_skipped``), not stacked
behind it; so is one whose previous run has not started yet or is still running, and with
``multitask_strategy "reject"`` one whose thread has another active run. Each tick is either a
queued run (``cron_ticked``) or a skip, both audited on the thread and counted
(``consentry_cron_ticks``).

**Missed ticks.** Ticks that came while no process could take them (every replica down, or the
scheduler late) are one run, the due one, and its next tick is the first after that moment; the
run's ``cron_ticked`` record counts the others (``missed``).

**Waking.** The sleep ends at the earliest due tick, or earlier when any process creates,
changes or deletes a cron (``storage.crons.CRONS_CHANNEL``, a notification), never on a timer of
its own; at most :data:`MAX_SLEEP_SECONDS` as a safety net for a notification lost while the
listener reconnected (which wakes it too), and for runs left waiting. A tick that fails (the
database refusing writes) stays due and is tried again after :data:`RETRY_SECONDS`; a stored
schedule a later release cannot read is skipped (``invalid_schedule``) and the cron ticks no more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import NAMESPACE_URL, uuid4, uuid5

from consentry.errors import ConsentryError, InvalidRequestError
from consentry.observability.metrics import Metrics
from consentry.principal import Principal
from consentry.runtime.assistants import Assistants
from consentry.runtime.background import BackgroundLoop
from consentry.runtime.clock import Clock
from consentry.runtime.crons._crons import CronPlan
from consentry.runtime.crons._schedules import Schedule
from consentry.runtime.replicas import EventNotifications
from consentry.runtime.runs import RunQueue, ThreadWriter
from consentry.storage import audit as audit_repo
from consentry.storage import crons as crons_repo
from consentry.storage import run_queue as queue_repo
from consentry.storage import threads as threads_repo
from consentry.storage.crons import CronRecord
from consentry.storage.db.database import Database, DbConnection

__all__ = ["CronScheduler"]

log = logging.getLogger(__name__)

MAX_SLEEP_SECONDS = 300.0
RETRY_SECONDS = 5.0
"""After a pass failed (the database away): try again then."""
STOP_WAIT_SECONDS = 5.0
_BATCH = 100

SkipReason = Literal[
    "consent_pending",
    "previous_run_waiting",
    "previous_run_running",
    "thread_busy",
    "assistant_not_found",
    "invalid_schedule",
]
MISSED_COUNTED = 10_000
"""At most this many ticks missed by one run are counted (``missed``)."""


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
        orphan_after: timedelta,
    ) -> None:
        """``orphan_after``: how long a cron's run may wait in its queue before this process
        starts it (its own process stopped first): the run lease."""
        self._db = db
        self._clock = clock
        self._queue = queue
        self._threads = threads
        self._assistants = assistants
        self._notifications = notifications
        self._metrics = metrics
        self._orphan_after = orphan_after
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._stopping = False
            self._task = asyncio.create_task(self._run(), name="cron-scheduler")

    async def stop(self) -> None:
        """Stop between statements (up to ``STOP_WAIT_SECONDS``): a tick taken is queued."""
        await self._stop_between_passes(STOP_WAIT_SECONDS)
        self._task = None

    async def _run(self) -> None:
        async with self._notifications.watch_crons() as changed:

            async def one_pass() -> float:
                changed.clear()  # a cron changed from now on wakes the next wait
                failed = await self._take_due_ticks()
                await self._start_orphans()
                wait = await self._seconds_to_next_tick()
                # A tick that failed (the database refusing writes, say) stays due: not again
                # at once.
                return max(wait, RETRY_SECONDS) if failed else wait

            async def wait(delay: float) -> None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), delay)

            await self._passes(
                one_pass,
                wait=wait,
                retry_seconds=RETRY_SECONDS,
                failure="the cron scheduler's pass failed",
            )

    async def _take_due_ticks(self) -> bool:
        """Take every tick due now (those another process takes first excepted), batch after
        batch; whether any failed."""
        failed, after = False, None
        while not self._stopping:
            async with self._db.read() as conn:
                due = await crons_repo.due_crons(conn, now=self._clock(), after=after, limit=_BATCH)
            for cron in due:
                if self._stopping:
                    break
                try:
                    await self._take(cron)
                except Exception:  # one cron's failure (the database) does not hold the others
                    log.exception("a cron's tick failed", extra={"cron_id": cron.id})
                    failed = True
            if len(due) < _BATCH:
                break
            last = due[-1]
            assert last.next_run_at is not None
            after = (last.next_run_at, last.id)
        return failed

    async def _start_orphans(self) -> None:
        """Start the crons' runs left waiting by a process that stopped right after queuing
        them (any process may: the first drainer to claim one starts it)."""
        async with self._db.read() as conn:
            threads = await crons_repo.waiting_cron_runs(
                conn, queued_before=self._clock() - self._orphan_after
            )
        for thread_id in threads:
            self._queue.drain(thread_id)

    async def _seconds_to_next_tick(self) -> float:
        async with self._db.read() as conn:
            due = await crons_repo.next_due_at(conn)
        if due is None:
            return MAX_SLEEP_SECONDS
        wait = (due - self._clock()) / timedelta(seconds=1)
        return min(max(wait, 0.0), MAX_SLEEP_SECONDS)

    async def _take(self, cron: CronRecord) -> None:
        """Take the cron's due tick, in one transaction: move it on (a compare-and-set: no
        other process takes it), then queue its run, or skip it (audited)."""
        assert cron.next_run_at is not None
        due, now, owner = cron.next_run_at, self._clock(), cron.owner
        plan = CronPlan(cron.schedule, cron.timezone, cron.end_time, cron.enabled)
        skip: SkipReason | None = None
        try:
            schedule = Schedule.of(cron.schedule, cron.timezone)
            following = plan.next_tick(max(now, due))  # (the ticks missed meanwhile: this one)
            missed = schedule.ticks_between(due, now, at_most=MISSED_COUNTED)
        except InvalidRequestError:  # stored by a release that read it (croniter, tzdata)
            skip, following, missed = "invalid_schedule", None, 0
        graph = None
        if skip is None and cron.thread_id is None:
            try:
                graph = (await self._assistants.get(owner, cron.assistant_id)).graph
            except ConsentryError:
                skip = "assistant_not_found"
        drain: str | None = None
        tick: dict[str, Any] = {"cron_id": cron.id, "due_at": due.isoformat()}
        if missed:
            tick["missed"] = missed  # ticks that came while no process could take them
        async with self._db.write() as conn:
            if not await crons_repo.take_tick(conn, cron, next_run_at=following):
                return
            if skip is None:
                skip, drain = await self._skip_reason(conn, cron)
            if skip is not None:
                await self._record_skip(conn, cron, {**tick, "reason": skip}, now=now)
            else:
                run_id = str(uuid4())
                thread_id = await self._thread_of(conn, cron, due, graph)
                await self._queue_run(conn, cron, run_id=run_id, thread_id=thread_id, now=now)
                await crons_repo.set_last_run(conn, cron.id, run_id=run_id, thread_id=thread_id)
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
        if drain is not None:
            self._queue.drain(drain)  # its process may be gone: start it
        if skip is not None:
            self._metrics.cron_ticks.labels(outcome="skipped", reason=skip).inc()
            log.info("a cron's tick was skipped", extra={**tick, "reason": skip})
            return
        self._metrics.cron_ticks.labels(outcome="queued", reason="").inc()
        log.info("a cron's tick queued its run", extra={**tick, "run_id": run_id})
        self._queue.drain(thread_id)
        if cron.thread_id is None and cron.on_run_completed != "keep":
            delete = _deleting(self._threads, owner, thread_id)
            self._queue.after_end(owner, thread_id, run_id, delete)

    async def _skip_reason(
        self, conn: DbConnection, cron: CronRecord
    ) -> tuple[SkipReason | None, str | None]:
        """Why the cron's tick starts no run, if it does not (read in the transaction that took
        it), and the thread to drain (a previous run still waiting)."""
        if cron.last_run_id is not None and cron.last_thread_id is not None:
            last = await queue_repo.queued_run(conn, cron.last_thread_id, cron.last_run_id)
            if last is not None and last.status == "waiting":
                return "previous_run_waiting", cron.last_thread_id
        thread_id = cron.thread_id or cron.last_thread_id
        if thread_id is None or not await threads_repo.thread_id_taken(conn, thread_id):
            return None, None
        thread = await threads_repo.get_thread(conn, cron.owner, thread_id)
        if thread.status == "awaiting_consent":
            return "consent_pending", None
        if thread.status == "running" and thread.active_run_id == cron.last_run_id:
            return "previous_run_running", None
        strategy = cron.payload.get("multitask_strategy")
        if cron.thread_id is not None and thread.status == "running" and strategy == "reject":
            return "thread_busy", None
        return None, None

    async def _record_skip(
        self, conn: DbConnection, cron: CronRecord, tick: dict[str, Any], *, now: datetime
    ) -> None:
        """The skip on the audit trail of the cron's thread (or its latest tick's), if any."""
        thread_id = cron.thread_id or cron.last_thread_id
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

    async def _thread_of(
        self, conn: DbConnection, cron: CronRecord, due: datetime, graph: str | None
    ) -> str:
        """The tick's thread: the cron's, or a new one named by the tick."""
        if cron.thread_id is not None:
            return cron.thread_id
        assert graph is not None
        thread_id = str(uuid5(NAMESPACE_URL, f"consentry-cron/{cron.id}/{due.isoformat()}"))
        await self._threads.create_in(
            conn, cron.owner, thread_id=thread_id, graph=graph, metadata={"cron_id": cron.id}
        )
        return thread_id

    async def _queue_run(
        self, conn: DbConnection, cron: CronRecord, *, run_id: str, thread_id: str, now: datetime
    ) -> None:
        """The tick's run, queued in its thread's run queue as the cron's payload says it, its
        metadata naming the cron."""
        metadata = {**(cron.payload.get("metadata") or {}), "cron_id": cron.id}
        request = {k: v for k, v in cron.payload.items() if k != "multitask_strategy"}
        request["metadata"] = metadata  # (the run's, as a webhook posts it too)
        await queue_repo.add_queued_run(
            conn,
            cron.owner,
            run_id=run_id,
            thread_id=thread_id,
            request=request,
            metadata=metadata,
            now=now,
        )


def _deleting(
    threads: ThreadWriter, owner: Principal, thread_id: str
) -> Callable[[], Awaitable[None]]:
    """The deletion of a cron's new thread once its run has ended (unless a consent waits)."""

    async def delete() -> None:
        await threads.delete_if_done(owner, thread_id)

    return delete
