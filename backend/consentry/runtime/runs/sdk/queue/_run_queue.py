"""``RunQueue``: runs asked of a busy thread, stored, started in turn (the room's face tells the
whole story)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

from consentry.errors import ConflictError, ConsentryError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs._service import RunService
from consentry.runtime.runs.execute import ActiveRun, ClaimHold
from consentry.runtime.runs.sdk.queue._drainers import QueueDrainers
from consentry.runtime.runs.sdk.queue._waits import (
    BehindQueue,
    Outcome,
    Queued,
    QueuedHold,
    Settled,
    Waiter,
    ended_waiting,
    settled_by,
)
from consentry.schemas.chat import ChatRequest
from consentry.storage import events as events_repo
from consentry.storage import run_queue as queue_repo
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.db.database import Database
from consentry.storage.run_queue import QueuedRun

__all__ = ["RunQueue"]

log = logging.getLogger(__name__)

_RETRY_SECONDS = (0.05, 0.1, 0.2, 0.5, 1.0)
"""Back-off when the thread was busy again at once (another request's run won the claim)."""


class RunQueue:
    def __init__(
        self,
        *,
        db: Database,
        runs: RunService,
        clock: Clock,
        prepare: Callable[[Principal, str, dict[str, Any]], Awaitable[ChatRequest]],
        started: Callable[[dict[str, Any] | None, ActiveRun], Awaitable[None]],
    ) -> None:
        """``prepare``: the run service's request for a queued one (as the face that queued it
        sent it), on its thread as the thread is now. ``started``: told of each run this
        process started, with the metadata the client queued it with."""
        self._db = db
        self._runs = runs
        self._clock = clock
        self._prepare = prepare
        self._started = started
        self._drainers = QueueDrainers(self._drain_thread)
        self._waiters: dict[str, list[Waiter]] = {}
        """run id → the requests waiting for it to start, first come first."""
        self._cancels: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        """Drain every thread a run waits on (those queued before a restart, or elsewhere)."""
        async with self._db.read() as conn:
            for thread_id in await queue_repo.threads_with_queued_runs(conn):
                self._drainers.drain(thread_id)

    def drain(self, thread_id: str) -> None:
        """Start the thread's queued runs here, in turn: runs queued outside a request (a
        cron's tick), or left waiting by a process that stopped."""
        self._drainers.drain(thread_id)

    async def stop(self) -> None:
        drainers = [*self._drainers.tasks, *self._cancels]
        for task in drainers:
            task.cancel()
        await asyncio.gather(*drainers, return_exceptions=True)

    async def add(
        self,
        owner: Principal,
        thread_id: str,
        run_id: str,
        request: dict[str, Any],
        metadata: dict[str, Any] | None,
        *,
        hold: ClaimHold | None,
        after_seconds: float | None = None,
    ) -> Queued:
        """Queue a run (``hold``: the request's ``Idempotency-Key``, completed with it), due at
        once or ``after_seconds`` from now."""
        now = self._clock()
        due_at = now + timedelta(seconds=after_seconds) if after_seconds else None
        async with self._db.write() as conn:
            await threads_repo.get_thread(conn, owner, thread_id)  # 404 for another's
            await queue_repo.add_queued_run(
                conn,
                owner,
                run_id=run_id,
                thread_id=thread_id,
                request=request,
                metadata=metadata,
                now=now,
                due_at=due_at,
            )
            if hold is not None:
                await hold.complete(conn, thread_id=thread_id, run_id=run_id)
        self._drainers.drain(thread_id)
        return Queued(thread_id, run_id)

    async def start_now(
        self,
        owner: Principal,
        request: ChatRequest,
        waiter: Waiter,
        *,
        key: ClaimHold | None,
        metadata: dict[str, Any] | None,
    ) -> bool:
        """Start the run ``waiter`` waits for at once, as its request (checked as a request
        that starts now), and hand it over as a drainer would: the default ``enqueue``'s way on
        an idle thread, with no row in the queue. False (nothing started, ``key`` untouched)
        when the thread is busy or a run waits in its queue: queue it then (``add``)."""
        try:
            run = await self._runs.start(
                owner, request, key=BehindQueue(waiter.run_id, key, self._clock)
            )
        except ConflictError as exc:
            if exc.code == "run_in_progress":
                return False
            raise
        self.forget(waiter)  # (not done yet: nothing to detach) no drainer hands it over
        waiter.events = run.events.listen(graph_modes=waiter.graph_modes, kept=waiter.kept)
        waiter.future.set_result(run)
        await self._started(metadata, run)
        return True

    def expect(
        self,
        thread_id: str,
        run_id: str,
        *,
        graph_modes: frozenset[str] = frozenset(),
        kept: bool = False,
    ) -> Waiter:
        """A request will wait for this run (``events``): call it before the run is queued, so
        a drainer that starts it at once hands it over."""
        future = asyncio.get_running_loop().create_future()
        waiter = Waiter(thread_id, run_id, future, graph_modes, kept)
        self._waiters.setdefault(run_id, []).append(waiter)
        return waiter

    def forget(self, waiter: Waiter) -> None:
        """The request no longer waits (it went away, or its run was never queued): a run
        started for it goes on alone."""
        waiting = self._waiters.get(waiter.run_id, [])
        if waiter in waiting:
            waiting.remove(waiter)
            if not waiting:
                del self._waiters[waiter.run_id]
        future = waiter.future  # (cancelled with the request that awaited it)
        outcome = future.result() if future.done() and not future.cancelled() else None
        if isinstance(outcome, ActiveRun):
            outcome.events.detach()

    async def events(self, owner: Principal, waiter: Waiter) -> AsyncIterator[OutgoingEvent]:
        """The run's events once it starts: live when this process started it for this waiter,
        else through the log; a refused or cancelled run's end as events."""
        thread_id, run_id = waiter.thread_id, waiter.run_id
        try:
            outcome = await self._outcome(waiter)
            if isinstance(outcome, ActiveRun):
                async for event in waiter.events or outcome.events.listen():
                    yield event
            elif outcome.status == "started":
                modes = waiter.graph_modes  # what the run keeps, and makes while followed here
                replayed = await self._runs.replay(owner, thread_id, run_id, graph_modes=modes)
                async for event in replayed:
                    yield event
            else:
                for event in ended_waiting(thread_id, run_id, outcome):
                    yield event
        finally:  # (``closed`` does it at once when the request ends)
            self.forget(waiter)

    def closed(self, owner: Principal, waiter: Waiter, *, cancel: bool) -> None:
        """The request that waited for the run is over (its client may have gone): stop
        waiting, let a run started for it go on alone, or (``cancel``) cancel it."""
        self.forget(waiter)
        if cancel:
            self.cancel_soon(owner, waiter.thread_id, waiter.run_id)

    def cancel_soon(self, owner: Principal, thread_id: str, run_id: str) -> None:
        """Cancel the run, waiting or running, in the background (its client went away with
        ``on_disconnect="cancel"``); nothing when it has ended."""
        task = asyncio.create_task(self._cancel_quietly(owner, thread_id, run_id))
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)

    def after_end(
        self, owner: Principal, thread_id: str, run_id: str, then: Callable[[], Awaitable[None]]
    ) -> None:
        """Call ``then`` in the background once the run has ended (or never started)."""

        async def follow() -> None:
            try:
                async for _ in self.events(owner, self.expect(thread_id, run_id)):
                    pass
                await then()
            except Exception:  # (a thread deleted meanwhile, the database): said, not raised
                log.exception("after a run's end", extra={"run_id": run_id})

        task = asyncio.create_task(follow())
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)

    async def _cancel_quietly(self, owner: Principal, thread_id: str, run_id: str) -> None:
        with contextlib.suppress(ConflictError, NotFoundError):  # it ended, or was deleted
            if not await self.cancel(owner, thread_id, run_id):
                await self._runs.cancel(owner, thread_id, run_id=run_id)

    async def interrupt(self, owner: Principal, thread_id: str) -> None:
        """Cancel the thread's active run, if any (``multitask_strategy="interrupt"``): the runs
        queued after it start once it has ended (within about ``CANCEL_GRACE_SECONDS``)."""
        with contextlib.suppress(ConflictError):  # none runs, or it ended meanwhile
            await self._runs.cancel(owner, thread_id)

    async def cancel(self, owner: Principal, thread_id: str, run_id: str) -> bool:
        """Cancel a run still waiting (False when it is not)."""
        async with self._db.write() as conn:
            await threads_repo.get_thread(conn, owner, thread_id)  # 404 for another's
            found = await queue_repo.queued_run(conn, thread_id, run_id)
            cancelled = found is not None and await queue_repo.cancel_queued_run(
                conn, run_id, now=self._clock()
            )
        if cancelled:
            self._settle(run_id, Settled("cancelled"))
        return cancelled

    async def owner_runs(
        self, owner: Principal, *, thread_id: str | None, waiting: bool, running: bool
    ) -> list[tuple[str, str, bool]]:
        """The owner's waiting and active runs (``queue_repo.owner_runs``), of ``thread_id``
        (404 for another's) or of all the owner's threads."""
        async with self._db.read() as conn:
            if thread_id is not None:
                await threads_repo.get_thread(conn, owner, thread_id)
            return await queue_repo.owner_runs(
                conn, owner, thread_id=thread_id, waiting=waiting, running=running
            )

    async def _outcome(self, waiter: Waiter) -> Outcome:
        if not waiter.future.done():
            started = False
            async with self._db.read() as conn:
                row = await queue_repo.queued_run(conn, waiter.thread_id, waiter.run_id)
                if row is None:  # never queued (``start_now``), or the thread went with its queue
                    started = await runs_repo.run_status(conn, waiter.run_id) is not None
            if row is None and not waiter.future.done():
                # A run the default ``enqueue`` started at once, which a repeat of its
                # ``Idempotency-Key`` reads from the log; or none, its thread deleted.
                self.forget(waiter)
                if started:
                    return Settled("started")
                return Settled("refused", "thread_not_found", "The thread is gone.")
            if row is not None and row.status != "waiting" and not waiter.future.done():
                # Not waiting any more: as the row says (a start of this process that would
                # resolve the wait after this finds nobody waiting, and lets its run go alone).
                self.forget(waiter)
                return settled_by(row)
            self._drainers.drain(waiter.thread_id)
        return await waiter.future

    async def _drain_thread(self, thread_id: str) -> None:
        tries = 0
        while True:
            self._drainers.looking(thread_id)
            try:
                row = await self._next(thread_id)
                if row is None:
                    if self._drainers.queued_meanwhile(thread_id):  # queued as this looked
                        continue
                    return  # (nothing awaited after the look: a later drain starts anew)
                if (due := (row.created_at - self._clock()).total_seconds()) > 0:
                    await self._drainers.sleep(thread_id, due)  # (``after_seconds``)
                    continue
                waited = await self._wait_for_thread(row)
                if waited is None and await self._start(row):
                    tries = 0
                    continue
                if waited:  # the active run ended: try at once
                    continue
            except NotFoundError:  # the thread was deleted (and its queue with it)
                continue
            except Exception:  # the database, say: try again, never drop a queued run
                log.exception("a thread's run queue failed", extra={"thread_id": thread_id})
            # Busy again at once (another request's run won the claim), or failed.
            await asyncio.sleep(_RETRY_SECONDS[min(tries, len(_RETRY_SECONDS) - 1)])
            tries += 1

    async def _next(self, thread_id: str) -> QueuedRun | None:
        await self._settle_waiters(thread_id)
        async with self._db.read() as conn:
            return await queue_repo.next_queued_run(conn, thread_id)

    async def _wait_for_thread(self, row: QueuedRun) -> int | None:
        """None when the thread has no active run; else follow that run to its end (woken by
        its events) and say how many events it sent meanwhile."""
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, row.owner, row.thread_id)
            if thread.status != "running":
                return None
            stored = await events_repo.last_stored_seq(conn, row.thread_id)
        seen = 0
        async for _ in await self._runs.join(row.owner, row.thread_id, after_seq=stored):
            seen += 1
        return seen

    async def _start(self, row: QueuedRun) -> bool:
        """Start the queued run; False when the thread was busy again."""
        try:
            request = await self._prepare(row.owner, row.thread_id, row.request)
            run = await self._runs.start(row.owner, request, key=QueuedHold(row.id, self._clock))
        except ConflictError as exc:
            if exc.code == "run_in_progress":
                return False
            if exc.code != "run_not_queued":
                await self._refuse(row, exc)
            return True
        except ConsentryError as exc:
            await self._refuse(row, exc)
            return True
        # The first request waiting gets the run's events live; any other reads them from the
        # log (one listener per run stream); with nobody waiting they are stored only.
        waiting = [w for w in self._waiters.pop(row.id, []) if not w.future.done()]
        if waiting:  # listened to now, in the turn the run's task was made: from its first step
            first = waiting[0]
            first.events = run.events.listen(graph_modes=first.graph_modes, kept=first.kept)
            waiting[0].future.set_result(run)
        else:
            run.events.detach()
        for other in waiting[1:]:
            other.future.set_result(Settled("started"))
        await self._started(row.metadata, run)
        return True

    async def _refuse(self, row: QueuedRun, exc: ConsentryError) -> None:
        async with self._db.write() as conn:
            await queue_repo.refuse_queued_run(
                conn, row.id, code=exc.code, message=exc.message, now=self._clock()
            )
        log.info("a queued run was refused", extra={"run_id": row.id, "code": exc.code})

    async def _settle_waiters(self, thread_id: str) -> None:
        """Resolve the waits of this thread's runs that are no longer waiting (started by
        another process, refused, cancelled)."""
        expected = [
            run_id
            for run_id, waiting in self._waiters.items()
            if waiting and waiting[0].thread_id == thread_id
        ]
        if not expected:
            return
        async with self._db.read() as conn:
            rows = [await queue_repo.queued_run(conn, thread_id, run_id) for run_id in expected]
            gone = None in rows and not await threads_repo.thread_id_taken(conn, thread_id)
        for run_id, row in zip(expected, rows, strict=True):
            if row is None:  # not queued yet (its request is adding it), or its thread is gone
                if gone:
                    gone_now = Settled("refused", "thread_not_found", "The thread is gone.")
                    self._settle(run_id, gone_now)
            elif row.status != "waiting":
                self._settle(run_id, settled_by(row))

    def _settle(self, run_id: str, settled: Settled) -> None:
        for waiter in self._waiters.pop(run_id, []):
            if not waiter.future.done():
                waiter.future.set_result(settled)
