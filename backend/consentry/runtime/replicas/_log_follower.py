"""Following a run that executes in another process, through the stored event log.

The other process stores every durable event before it sends it; PostgreSQL notifies each insert
(``runtime.notifications``). A follower reads the rows after the last one it sent whenever it is
woken, until the run's ``final``. Token events are not stored, so a follower sends the complete
``message`` events, not their tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.replicas._notifications import EventNotifications
from consentry.storage import events as events_repo
from consentry.storage import runs as runs_repo
from consentry.storage.db.database import Database
from consentry.storage.events import StoredEvent

__all__ = ["FOLLOW_RECHECK_SECONDS", "FollowedRun", "follow_log"]

_GOING = ("running", "queued")

FOLLOW_RECHECK_SECONDS = 15.0
"""How long to wait for a notification before reading the log again anyway (a safety net:
notifications are the trigger)."""


async def follow_log(
    db: Database,
    notifications: EventNotifications,
    *,
    thread_id: str,
    run_id: str,
    after_seq: int,
    first: Sequence[StoredEvent] = (),
) -> AsyncIterator[OutgoingEvent]:
    """``first`` (rows already read), then the thread's events as they are stored, until the
    ``final`` of ``run_id`` (or until that run is no longer running and nothing new came). When
    that run's process died and another took it over, the run that continues it (trigger
    ``recovery``) is followed too, as the client would see it on the process that executes it."""
    async with notifications.watch(thread_id) as woken:
        woken.set()  # read once more after watching: nothing stored in between is missed
        batch, seen = list(first), after_seq
        while True:
            for row in batch:
                seen = row.seq
                yield OutgoingEvent(row.seq, row.type, row.data)
                if row.type == "final" and row.run_id == run_id:
                    async with db.read() as conn:
                        successor = await runs_repo.recovery_of(conn, run_id)
                    if successor is None:
                        return
                    run_id = successor
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FOLLOW_RECHECK_SECONDS):
                    await woken.wait()
            woken.clear()
            async with db.read() as conn:
                batch = await events_repo.events_after(conn, thread_id, seen)
                if not batch and await runs_repo.run_status(conn, run_id) not in _GOING:
                    # On PostgreSQL each statement reads its own snapshot: the run may have ended
                    # after the events were read. Its end stored its last events, which a read
                    # after the status's sees.
                    batch = await events_repo.events_after(conn, thread_id, seen)
                    if not batch:
                        return


class FollowedRun:
    """The events of a run queued for a worker process, as the request that started it reads
    them (the same ``listen``/``detach`` as a local run's ``RunEventStream``)."""

    def __init__(
        self,
        db: Database,
        notifications: EventNotifications,
        *,
        thread_id: str,
        run_id: str,
        after_seq: int,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self._db = db
        self._notifications = notifications
        self._after_seq = after_seq

    def listen(self, *, graph_modes: frozenset[str] = frozenset()) -> AsyncIterator[OutgoingEvent]:
        """The run's stored events as they are stored. ``graph_modes`` is not served: LangGraph's
        outputs after each step are never stored, so a run read from the log has none of them."""
        return follow_log(
            self._db,
            self._notifications,
            thread_id=self.thread_id,
            run_id=self.run_id,
            after_seq=self._after_seq,
        )

    def detach(self) -> None:
        """Nothing to let go of: the worker runs on whether anybody reads the log."""
