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

from consentry.runtime.outgoing import OutgoingEvent, kept_outputs
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
    graph_modes: frozenset[str] = frozenset(),
) -> AsyncIterator[OutgoingEvent]:
    """``first`` (rows already read), then the thread's events as they are stored, until the
    ``final`` of ``run_id`` (or until that run is no longer running and nothing new came). When
    that run's process died and another took it over, the run that continues it (trigger
    ``recovery``) is followed too, as the client would see it on the process that executes it.
    The graph outputs of ``graph_modes`` a run kept with its events come before each
    (``kept_outputs``; those numbered ``after_seq`` the client may have had: not again)."""
    async with notifications.watch(thread_id) as woken:
        woken.set()  # read once more after watching: nothing stored in between is missed
        batch, seen, outputs_from = list(first), after_seq, after_seq + 1
        kept = bool(graph_modes)
        while True:
            for row in batch:
                stored = OutgoingEvent(row.seq, row.type, row.data, row.outputs)
                for event in kept_outputs(stored, graph_modes, outputs_from=outputs_from):
                    yield event
                seen = outputs_from = row.seq
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
                batch = await events_repo.events_after(conn, thread_id, seen, with_outputs=kept)
                if not batch and await runs_repo.run_status(conn, run_id) not in _GOING:
                    # On PostgreSQL each statement reads its own snapshot: the run may have ended
                    # after the events were read. Its end stored its last events, which a read
                    # after the status's sees.
                    batch = await events_repo.events_after(conn, thread_id, seen, with_outputs=kept)
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

    def listen(
        self, *, graph_modes: frozenset[str] = frozenset(), kept: bool = False
    ) -> AsyncIterator[OutgoingEvent]:
        """The run's stored events as they are stored. ``graph_modes`` and ``kept`` are not
        served: the worker records the run's graph outputs for nobody, and keeps none."""
        return follow_log(
            self._db,
            self._notifications,
            thread_id=self.thread_id,
            run_id=self.run_id,
            after_seq=self._after_seq,
        )

    def detach(self) -> None:
        """Nothing to let go of: the worker runs on whether anybody reads the log."""
