"""What a request that waits for a queued run holds, and what claims a thread for one: the
queued run's ids (``Queued``), the wait (``Waiter``, resolved with the run or how its wait
ended: ``Settled``), the holds completed in the claim's transaction (``QueuedHold`` for a queued
row, ``BehindQueue`` for a run the default ``enqueue`` starts at once), and a wait that ended
without a run as the events a face sends (``ended_waiting``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

from consentry.errors import ConflictError
from consentry.runtime.clock import Clock
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs.execute import ActiveRun, ClaimHold
from consentry.storage import run_queue as queue_repo
from consentry.storage.db.database import DbConnection
from consentry.storage.run_queue import QueuedRun

__all__ = [
    "BehindQueue",
    "Outcome",
    "Queued",
    "QueuedHold",
    "Settled",
    "Waiter",
    "ended_waiting",
    "settled_by",
]


@dataclass(frozen=True)
class Queued:
    """A queued run's ids (what an ``Idempotency-Key`` names)."""

    thread_id: str
    run_id: str


@dataclass(frozen=True)
class Settled:
    """How a queued run ended its wait, when it was not started by this process."""

    status: str
    """``started`` (elsewhere), ``refused``, ``cancelled`` or ``deleted`` (cancelled, then
    deleted)."""
    code: str | None = None
    message: str | None = None


Outcome = ActiveRun | Settled


@dataclass(eq=False)
class Waiter:
    """A request waiting for a queued run to start (``RunQueue.expect``)."""

    thread_id: str
    run_id: str
    future: asyncio.Future[Outcome]
    graph_modes: frozenset[str]
    """The graph outputs the request streams (``SdkStream.graph_modes``)."""
    kept: bool = False
    """The run keeps them for joins to replay (``stream_resumable``: ``RunEventStream.listen``)."""
    repeat: bool = False
    """The request repeats an ``Idempotency-Key``: this is the first request's run."""
    events: AsyncIterator[OutgoingEvent] | None = None
    """The run's events, listened to from its first (the run this process started for it)."""

    @property
    def started(self) -> ActiveRun | None:
        """The run, when it was started for this request at once (``RunQueue.start_now``)."""
        future = self.future
        done = future.done() and not future.cancelled()
        outcome = future.result() if done else None
        return outcome if isinstance(outcome, ActiveRun) else None


@dataclass
class QueuedHold:
    """Takes the queued row in the transaction that claims the thread (``runs.ClaimHold``)."""

    run_id: str
    clock: Clock

    async def complete(self, conn: DbConnection, *, thread_id: str, run_id: str) -> None:
        if not await queue_repo.take_queued_run(conn, self.run_id, now=self.clock()):
            raise ConflictError(
                "This queued run is no longer waiting.",
                code="run_not_queued",
                details={"run_id": self.run_id},
            )


@dataclass
class BehindQueue:
    """A run started at once on a thread (``RunQueue.start_now``): it takes the waiter's id, and
    its claim is refused (``run_in_progress``, rolled back) when a run due now waits in the
    thread's queue, which goes first (one due later, ``after_seconds``, does not hold it); then
    the request's own hold (its ``Idempotency-Key``)."""

    run_id: str
    key: ClaimHold | None
    clock: Clock

    async def complete(self, conn: DbConnection, *, thread_id: str, run_id: str) -> None:
        if await queue_repo.next_queued_run(conn, thread_id, due_by=self.clock()) is not None:
            raise ConflictError(
                "Runs wait in this thread's queue: this one goes after them.",
                code="run_in_progress",
                details={"thread_id": thread_id},
            )
        if self.key is not None:
            await self.key.complete(conn, thread_id=thread_id, run_id=run_id)


def settled_by(row: QueuedRun) -> Settled:
    refused = row.status == "deleted" and row.error_code is not None  # (refused, then deleted)
    return Settled("refused" if refused else row.status, row.error_code, row.error_message)


def ended_waiting(thread_id: str, run_id: str, settled: Settled) -> list[OutgoingEvent]:
    """The end of a run that never started, as the events a face sends: its start (the SDK's
    ``metadata``), the error that refused it, its ``final``. They are not stored (seq 0)."""
    ids = {"thread_id": thread_id, "run_id": run_id}
    events = [OutgoingEvent(0, "run_started", json.dumps(ids))]
    reason = "cancelled"
    if settled.status == "refused":
        reason = "failed"
        error = {**ids, "code": settled.code, "message": settled.message}
        events.append(OutgoingEvent(0, "error", json.dumps(error)))
    events.append(OutgoingEvent(0, "final", json.dumps({**ids, "reason": reason})))
    return events
