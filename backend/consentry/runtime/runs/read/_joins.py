"""Joining a thread's stream: what a client that has seen up to an event missed (from the stored
log), then the active run live (in this process: its event stream; in another: the stored log,
woken by notifications), with no gap and no duplicate. And an idempotent retry's replay of the
run its first request started, through the runs that continued it after a crash.

``graph_modes``: LangGraph's outputs the joiner wants (the SDK face's ``values``, ``messages``...;
``RunEventStream``): those a run kept with its stored events (``stream_resumable``), read back
with them (from the log, from this process's history, from another replica's log as it stores
them: ``kept_outputs``), then those recorded from the moment it follows the run live. A run that
kept none gives a joiner that reads the log none of them: such a joiner gets the run's end state
only."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator

from consentry.errors import BadRequestError
from consentry.observability.metrics import Metrics
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.outgoing import OutgoingEvent, kept_outputs
from consentry.runtime.replicas import EventNotifications, follow_log
from consentry.runtime.runs.execute import (
    RunEventStream,
    RunExecutor,
    RunSuspendedError,
    graph_output_mode,
)
from consentry.schemas.events import ResyncEvent
from consentry.storage import events as events_repo
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.db.database import DATABASE_ERRORS, Database, is_database_unavailable
from consentry.storage.events import StoredEvent

__all__ = ["StreamJoins"]


class StreamJoins:
    def __init__(
        self,
        *,
        db: Database,
        executor: RunExecutor,
        clock: Clock,
        notifications: EventNotifications,
        metrics: Metrics,
    ) -> None:
        self._db = db
        self._metrics = metrics
        self._executor = executor
        self._clock = clock
        self._notifications = notifications

    async def join(
        self,
        owner: Principal,
        thread_id: str,
        *,
        after_seq: int,
        graph_modes: frozenset[str] = frozenset(),
    ) -> AsyncIterator[OutgoingEvent]:
        """What a client that has seen up to ``after_seq`` missed, then the active run live."""
        events, resynced = await self._catch_up(
            owner, thread_id, after_seq=after_seq, graph_modes=graph_modes
        )
        self._metrics.stream_replayed("resync" if resynced else "join")
        return events

    async def _catch_up(
        self, owner: Principal, thread_id: str, *, after_seq: int, graph_modes: frozenset[str]
    ) -> tuple[AsyncIterator[OutgoingEvent], bool]:
        """``join``'s events, and whether they start with a ``resync``.

        The active run is looked up before the stored events are read: a run that ends in
        between still hands over its events, and the seq filter drops any seen twice."""
        active = self._executor.active_stream(thread_id)
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, owner, thread_id)
            newest = await events_repo.last_stored_seq(conn, thread_id)
            if active is not None:
                newest = max(newest, active.last_seq)
            if after_seq > newest:
                raise BadRequestError(
                    f"Last-Event-ID {after_seq} is past this thread's last event ({newest}).",
                    code="invalid_last_event_id",
                    details={"last_event_id": after_seq, "last_seq": newest},
                )
            resync: OutgoingEvent | None = None
            if after_seq < thread.pruned_through:
                # The client asks for events the retention window dropped: say so, never a gap.
                after_seq = thread.pruned_through
                stored = await events_repo.events_after(
                    conn, thread_id, after_seq, with_outputs=bool(graph_modes)
                )
                event = ResyncEvent(
                    thread_id=thread_id,
                    run_id="",
                    seq=after_seq,
                    ts=self._clock(),
                    first_available_seq=stored[0].seq if stored else None,
                )
                resync = OutgoingEvent(event.seq, event.type, event.model_dump_json())
            else:
                stored = await events_repo.events_after(
                    conn, thread_id, after_seq, with_outputs=bool(graph_modes)
                )
        elsewhere = thread.active_run_id if thread.status == "running" else None
        if active is None and elsewhere is not None and self._notifications.enabled:
            # The run executes in another process: follow it through the stored log.
            followed = self._replay_then_follow(
                resync, stored, thread_id, elsewhere, after_seq, graph_modes
            )
            return followed, resync is not None
        live = self._replay_then_live(resync, stored, active, after_seq, graph_modes)
        return live, resync is not None

    async def _replay_then_follow(
        self,
        resync: OutgoingEvent | None,
        stored: list[StoredEvent],
        thread_id: str,
        run_id: str,
        after_seq: int,
        graph_modes: frozenset[str],
    ) -> AsyncIterator[OutgoingEvent]:
        """The stored events, then the ones another process stores, until that run's ``final``
        (the database going away meanwhile ends the stream with a reconnect hint)."""
        if resync is not None:
            yield resync
        with _reconnect_when_database_away(run_id):
            async for event in follow_log(
                self._db,
                self._notifications,
                thread_id=thread_id,
                run_id=run_id,
                after_seq=after_seq,
                first=stored,
                graph_modes=graph_modes,
            ):
                yield event

    @staticmethod
    async def _replay_then_live(
        resync: OutgoingEvent | None,
        stored: list[StoredEvent],
        active: RunEventStream | None,
        after_seq: int,
        graph_modes: frozenset[str],
    ) -> AsyncIterator[OutgoingEvent]:
        if resync is not None:
            yield resync
        seen, outputs_from = after_seq, after_seq + 1  # the client may have had some at its id
        for row in stored:
            stored_event = OutgoingEvent(row.seq, row.type, row.data, row.outputs)
            for event in kept_outputs(stored_event, graph_modes, outputs_from=outputs_from):
                yield event
            seen = outputs_from = row.seq  # what came after it is new to the client
        if active is not None:
            async for event in active.join(
                after_seq=seen, graph_modes=graph_modes, outputs_from=outputs_from
            ):
                # A token (or a graph output) carries the seq of the stored event before it: it
                # is new when that event is the last one sent (or a later one).
                if event.seq > seen or (event.seq == seen and _unnumbered(event)):
                    seen = event.seq
                    yield event

    async def replay_run(
        self,
        owner: Principal,
        thread_id: str,
        run_id: str,
        *,
        graph_modes: frozenset[str] = frozenset(),
    ) -> AsyncIterator[OutgoingEvent]:
        """Run ``run_id`` again for the client that started it (an idempotent retry): its events
        from its first, then those of the runs that continue it after a crash (trigger
        ``recovery``), live while one of them goes on, until the last one's ``final``."""
        async with self._db.read() as conn:
            first = await events_repo.first_run_seq(conn, thread_id, run_id)
            if first is None:  # nothing of it stored yet: it is the thread's newest run
                after_seq = await events_repo.last_stored_seq(conn, thread_id)
            else:
                after_seq = first - 1
        events, _ = await self._catch_up(
            owner, thread_id, after_seq=after_seq, graph_modes=graph_modes
        )
        return self._through_final(events, run_id)

    async def _through_final(
        self, events: AsyncIterator[OutgoingEvent], run_id: str
    ) -> AsyncIterator[OutgoingEvent]:
        async for event in events:
            yield event
            if event.type == "final" and json.loads(event.data)["run_id"] == run_id:
                with _reconnect_when_database_away(run_id):  # the client comes back for more
                    async with self._db.read() as conn:
                        successor = await runs_repo.recovery_of(conn, run_id)
                if successor is None:
                    return
                run_id = successor


@contextlib.contextmanager
def _reconnect_when_database_away(run_id: str) -> Iterator[None]:
    """A read of the stream's that finds the database away ends the stream as a suspended
    run's does: with a reconnect hint (``RunSuspendedError``), for the client to come back with
    ``Last-Event-ID``."""
    try:
        yield
    except DATABASE_ERRORS as exc:
        if not is_database_unavailable(exc):
            raise
        raise RunSuspendedError(run_id) from exc


def _unnumbered(event: OutgoingEvent) -> bool:
    """A token or a graph output: sent, never stored, numbered as the event before it."""
    return event.type == "token" or graph_output_mode(event.type) is not None
