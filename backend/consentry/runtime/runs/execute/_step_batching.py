"""When a run's progress events are stored: with the next write, or after a short delay.

``run_started`` and ``step`` say that something began. Stored on their own, each one cost a write
transaction: more than a third of a conversation's. Instead they wait for the next write (a
step's checkpoint with its ``message``, ``note`` or tool events, the run's end with its
``consent``), and go in its transaction, in order. A node that runs longer than the delay before
that (a model call, say) gets them stored and sent on their own, and so does a token streamed
after them (it cannot be sent before them), so a progress line is never later than either.

Nothing changes for the client but timing: no event is sent before it is stored, and none is
sent before an earlier one.

With Consentry's checkpointer (``storage.checkpoints``) the batcher is also the run's
``StepCommitter``: the events a step's results produce (a ``message``, a ``note``, a tool's call or
result) are not stored when their chunk arrives but in the transaction that writes the step's
checkpoint (``commit_step``), fenced by the run's lease: no such event is stored without the
checkpoint that holds its step, and no checkpoint without its events. What a step produced
without finishing (an interrupt, a failure, a stop) goes with the run's end. Progress events
still go ahead on their own (they say that something began, not what it produced), and so do
the tokens streamed before a held event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs.execute._event_stream import RunEventStream
from consentry.storage.checkpoints import CheckpointFence, HeadRead, TurnStart
from consentry.storage.db.database import Database, DbConnection
from consentry.storage.leases import LeaseLostError

__all__ = ["PROGRESS_DELAY_SECONDS", "ProgressBatcher"]

log = logging.getLogger(__name__)

PROGRESS_DELAY_SECONDS = 0.1
"""How long ``run_started`` and ``step`` events wait for the next write before their own."""


class EventWriter(Protocol):
    """Inserts a run's events in the caller's transaction (``RunStore.insert_events``);
    ``fence_checked``: the transaction checks the run's lease before it commits."""

    def __call__(
        self, conn: DbConnection, rows: list[OutgoingEvent], *, fence_checked: bool = False
    ) -> Awaitable[None]: ...


class ProgressBatcher:
    """Stores and sends one run's recorded events, holding progress back as described above."""

    def __init__(
        self,
        events: RunEventStream,
        store: EventWriter,
        *,
        db: Database,
        fence: CheckpointFence,
        latest_only: bool,
        keep_turns: bool = False,
        new_thread: bool = False,
        head: HeadRead | None = None,
        delay: float = PROGRESS_DELAY_SECONDS,
    ) -> None:
        """``store(conn, rows)``: insert the run's events in the caller's transaction. ``fence``,
        ``latest_only``, ``keep_turns``, ``new_thread`` and ``head``: what the run's
        checkpointer is told (``StepCommitter``)."""
        self._events = events
        self._store_in = store
        self._db = db
        self.fence = fence
        self.latest_only = latest_only
        self.keep_turns = keep_turns
        self.turn: TurnStart | None = None
        self.new_thread = new_thread
        self.head = head
        self._delay = delay
        self._lock = asyncio.Lock()
        self._timer: asyncio.TimerHandle | None = None
        self._late: asyncio.Task[None] | None = None

    async def after_chunk(self) -> None:
        """A chunk's events were recorded: store the progress and send what can go now (a
        token streamed after it), or, when nothing could be sent before a write (progress alone,
        or with a step's results, which wait for its checkpoint), in the next write or after
        the delay."""
        if self._events.unsent_waits_for_a_write:
            if self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(self._delay, self._on_timer)
            return
        self._cancel_timer()
        async with self._lock:
            rows = self._events.take_progress()  # a step's results wait for its checkpoint
            if rows:
                try:
                    await self._store(rows)
                except BaseException:
                    self._events.discard_unsent()  # neither stored nor sent
                    raise
            self._events.flush(through=self._events.first_unstored - 1)

    async def commit_step(self, write: Callable[[DbConnection], Awaitable[None]]) -> None:
        """The run's graph saves a step's checkpoint: ``write(conn)`` it, fenced, in one
        transaction with every event recorded so far; then send those. ``write`` is the
        transaction's last work (on PostgreSQL it may commit it: ``run_on(commit=True)``)."""
        self._cancel_timer()
        async with self._lock:
            rows = self._events.take_durable()
            committed = False
            try:
                async with self._db.write() as conn:
                    if rows:  # go first, in the checkpoint's message: fenced with it
                        await self._store_in(conn, rows, fence_checked=True)
                    try:
                        await write(conn)
                    except LeaseLostError:
                        raise  # the fence refused: nothing was written, committed or not
                    except BaseException:
                        committed = self._db.committed_with_its_last_statement(conn)
                        raise
            except BaseException:
                if committed and rows:
                    # The checkpoint's message committed the step (PostgreSQL) before what
                    # failed after it: its events are stored, so they are sent.
                    self._events.flush(through=rows[-1].seq)
                else:
                    # Neither the checkpoint nor its events: the step did not happen (it runs
                    # again from the last checkpoint), so nothing it produced is kept or sent.
                    self._events.discard_unsent()
                raise
            if rows:
                self._events.flush(through=rows[-1].seq)

    async def _store(self, rows: list[OutgoingEvent]) -> None:
        async with self._db.write() as conn:
            await self._store_in(conn, rows)

    async def settle(self) -> None:
        """Before the run's own last writes: no timer left, no write of ours in flight."""
        self._cancel_timer()
        if self._late is not None:
            await asyncio.shield(self._late)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        self._timer = None
        self._late = asyncio.create_task(self._store_late(), name="store-progress")

    async def _store_late(self) -> None:
        async with self._lock:
            rows = self._events.take_progress()
            if not rows:
                return
            try:
                await self._store(rows)
            except Exception:
                # Kept for the run's next write, which fails the run if the database is gone.
                self._events.restore_durable(rows)
                log.warning(
                    "could not store a run's progress events yet",
                    extra={"thread_id": self._events.thread_id, "run_id": self._events.run_id},
                    exc_info=True,
                )
                return
            finally:
                if self._late is asyncio.current_task():  # not a later one, queued behind us
                    self._late = None
            # The run may have recorded more meanwhile: send only what is stored.
            self._events.flush(through=rows[-1].seq)
