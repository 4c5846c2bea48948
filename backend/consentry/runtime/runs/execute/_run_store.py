"""Storing what a run produced, always fenced by its lease: its durable events (with each step's
checkpoint, ``step_batching``), with what they add to the transcript (messages) and to the
thread's tool calls (``tool_call``, ``tool_result``), and its end (the last events, the approvals
of its consents, its terminal reason, the thread's new status) in one transaction, after which
its ``consent`` and ``final`` events are sent. Also the stop without an end (shutdown, a lost
lease). Checkpoint retention is the checkpointer's (``storage.checkpoints``): no prune pass.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any
from uuid import uuid4

from consentry.observability.metrics import Metrics
from consentry.runtime.clock import Clock
from consentry.runtime.consents import ExpiryAlarm, record_consent, reopen_consent
from consentry.runtime.graph_state import read_values_as_json
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs.execute._failures import database_lost
from consentry.runtime.runs.execute._left_open import LeftOpenRuns
from consentry.runtime.runs.execute._run_rollback import undo_run_in
from consentry.runtime.runs.execute._run_types import Outcome, RunContext
from consentry.schemas.events import ErrorEvent, FinalEvent
from consentry.storage import approvals as approvals_repo
from consentry.storage import events as events_repo
from consentry.storage import leases as leases_repo
from consentry.storage import runs as runs_repo
from consentry.storage import webhooks as webhooks_repo
from consentry.storage.checkpoints import ConsentrySaver, saver_of
from consentry.storage.db.database import Database, DbConnection
from consentry.storage.leases import LeaseLostError
from consentry.storage.tool_calls import ToolCallAsked, ToolResultGiven, record_tool_events
from consentry.storage.transcript import TranscriptEntry, add_to_transcript
from consentry_graphs.registry import CompiledGraph

__all__ = ["RunStore", "continues_after_a_stop"]

log = logging.getLogger(__name__)

_TOOL_EVENTS = frozenset({"tool_call", "tool_result"})


def _tool_event(event_type: str, data: str) -> ToolCallAsked | ToolResultGiven:
    """A stored ``tool_call`` or ``tool_result`` event, as its row of the tool calls."""
    fields = json.loads(data)
    if event_type == "tool_call":
        return ToolCallAsked(
            fields["tool_call_id"], fields["name"], fields["args"], fields["message_id"]
        )
    return ToolResultGiven(
        fields["tool_call_id"],
        fields["name"],
        fields["status"],
        fields["content"],
        fields["content_chars"],
    )


def continues_after_a_stop(run: RunContext) -> bool:
    """Whether a run that stops for a takeover is to be continued by whoever closes it, on
    SQLite: not one a client cancelled, nor one that was itself such a continuation (a refusal
    that keeps coming back must not loop: ``LeftOpenRuns``)."""
    return run.stop != "cancel" and run.trigger != "recovery"


class RunStore:
    def __init__(
        self,
        *,
        db: Database,
        clock: Clock,
        metrics: Metrics,
        alarm: ExpiryAlarm,
        ended: Callable[[str, str], None],
        compiled: Callable[[str], CompiledGraph],
        left_open: LeftOpenRuns,
    ) -> None:
        """``ended(thread_id, run_id)``: a run ended (stored), so the thread is free of it in this
        process. ``compiled``: a served graph (its checkpointer, for a run rolled back).
        ``left_open``: told, on SQLite, of a run it leaves open (``LeftOpenRuns``)."""
        self._db = db
        self._compiled = compiled
        self._clock = clock
        self._metrics = metrics
        self._alarm = alarm
        self._ended = ended
        self._left_open = left_open

    async def store_events(
        self, conn: DbConnection, run: RunContext, *, fence_checked: bool = False
    ) -> None:
        """Store the run's recorded durable events, and what its graph held when it stopped (an
        interrupt, the finished tasks of its step: ``ConsentrySaver.write_held_in``), fenced by
        its lease (``fence_checked``: the transaction checks the lease itself before it commits,
        see ``insert_events``)."""
        await self.insert_events(
            conn, run.events.take_durable(), run=run, fence_checked=fence_checked
        )
        saver = self._saver(run)
        if saver is not None:  # taken like the events: stored with them, or lost with them
            await saver.write_held_in(conn, run.progress, checked_later=fence_checked)

    def _saver(self, run: RunContext) -> ConsentrySaver | None:
        saver = self._compiled(run.spec.name).checkpointer
        return saver if isinstance(saver, ConsentrySaver) else None

    async def insert_events(
        self,
        conn: DbConnection,
        rows: list[OutgoingEvent],
        *,
        run: RunContext,
        fence_checked: bool = False,
    ) -> None:
        """Insert events fenced by the run's lease, and what they add to the transcript (the
        user's messages given to the graph since the last write, then ``message`` events) and to
        the thread's tool calls (``tool_call`` and ``tool_result`` events), at one time."""
        now = self._clock()
        await events_repo.insert_events(
            conn,
            run.events,
            rows,
            fencing_token=run.fencing_token,
            now=now,
            fence_checked=fence_checked,
        )
        said = [json.loads(row.data) for row in rows if row.type == "message"]
        await add_to_transcript(
            conn,
            run.events.thread_id,
            [
                *run.events.take_transcript(),
                *(TranscriptEntry(m["message_id"], "assistant", m["content"]) for m in said),
            ],
            now=now,
        )
        tools = [_tool_event(row.type, row.data) for row in rows if row.type in _TOOL_EVENTS]
        if tools:
            await record_tool_events(
                conn,
                thread_id=run.events.thread_id,
                run_id=run.events.run_id,
                told=tools,
                now=now,
            )

    async def store_end(
        self, run: RunContext, outcome: Outcome, *, values: dict[str, Any] | None = None
    ) -> None:
        """The run's end, in one transaction (with the post of its record to its webhook,
        queued with ``values``, the thread's state values as the run left them)."""
        events, owner = run.events, run.owner
        now = self._clock()
        async with self._db.write() as conn:
            # The thread's release, last, checks the lease: refused, it rolls all of this back
            # (on PostgreSQL it goes with the COMMIT, which then fails).
            await self.store_events(conn, run, fence_checked=True)
            for consent in outcome.consents:
                await record_consent(conn, run.owner, consent, now=now)
            await runs_repo.record_run_end(
                conn,
                owner,
                thread_id=events.thread_id,
                run_id=events.run_id,
                reason=outcome.reason,
                error_code=outcome.error_code,
                now=now,
                usage=run.meter.usage,
            )
            # Rolled back before the thread is freed, so nothing starts from its writes; only
            # a run the cancel cut (one that ended by itself keeps what it did: 409 to the ask).
            undone = False
            if run.roll_back and outcome.reason in ("cancelled", "failed"):
                undone = await undo_run_in(
                    conn,
                    saver_of(self._compiled(run.spec.name)),
                    owner,
                    thread_id=events.thread_id,
                    run_id=events.run_id,
                    now=now,
                )
            if run.options.webhook is not None:  # (no statement for a run without one)
                await webhooks_repo.queue_delivery(
                    conn,
                    delivery_id=str(uuid4()),
                    run_id=events.run_id,
                    thread_id=events.thread_id,
                    tenant=owner.tenant,
                    graph=run.spec.name,
                    reason=outcome.reason,
                    error_code=outcome.error_code,
                    # A run rolled back is deleted with what it wrote: its values are no one's.
                    values=None if undone else values,
                    now=now,
                )
            # A run that stopped half-way may leave consents pending (a parallel branch's): the
            # thread still waits for them.
            if outcome.reason == "cancelled":
                await approvals_repo.cancel_run_approvals(conn, events.run_id, now=now)
            for approval_id in outcome.refused:
                await reopen_consent(conn, owner, approval_id, run_id=events.run_id, now=now)
            waiting = outcome.reason == "interrupted" or (
                outcome.reason in ("failed", "cancelled")
                and bool(await approvals_repo.pending_approvals(conn, events.thread_id))
            )
            await leases_repo.release_thread(
                conn,
                events.thread_id,
                run_id=events.run_id,
                fencing_token=run.fencing_token,
                status="awaiting_consent" if waiting else "idle",
                reason=outcome.reason,
                last_seq=events.last_seq,
                now=now,
                tokens_used=run.meter.run_tokens,
                last=True,  # on PostgreSQL, refused, it fails the commit: ``finish`` reads why
            )

    async def _values_posted(self, run: RunContext) -> dict[str, Any] | None:
        """The thread's state values as the run leaves them, for a run whose end is posted to a
        webhook (read before its closing transaction, once what its graph held is stored, in a
        transaction of its own: a finished branch beside an interrupt counts in them; as
        JSON-safe data); None for a run without one, or when they cannot be read (the post goes
        without)."""
        if run.options.webhook is None:
            return None
        saver = self._saver(run)
        if saver is not None:
            # What the graph held when it stopped (a finished branch beside an interrupt)
            # counts in the state's values: stored first.
            await saver.acommit_held(run.progress)
        graph = self._compiled(run.spec.name)
        return await read_values_as_json(graph, run.events.thread_id, run_id=run.events.run_id)

    async def _holds_lease(self, run: RunContext) -> bool:
        """Whether ``run`` still holds its lease (True when that cannot be read: the failure
        is then handled as the run's own)."""
        try:
            async with self._db.read() as conn:
                return await leases_repo.holds_lease(
                    conn,
                    run.events.thread_id,
                    run_id=run.events.run_id,
                    fencing_token=run.fencing_token,
                )
        except Exception:
            return True

    async def finish(self, run: RunContext, outcome: Outcome) -> None:
        """Store everything the run produced in one transaction, then send consent + final.

        If that transaction fails, a second, smaller one still ends the run as ``failed`` and
        frees the thread (the events made so far are logged as lost); only if that fails too
        (the database is away) is nothing of the end sent: the thread keeps the run, whose lease
        expires, and a replica's takeover (on SQLite this process, once the database takes
        writes again: ``LeftOpenRuns``) closes and continues it."""
        events = run.events
        await run.progress.settle()
        values = None
        try:
            try:
                # Before the end's events are recorded: what that stores (a webhook's state
                # values count what the graph held) is sent at once.
                values = await self._values_posted(run)
                final = events.make(FinalEvent, reason=outcome.reason, usage=run.meter.usage)
                for event in (*outcome.consents, final):
                    events.record(event)
                await self.store_end(run, outcome, values=values)
            except Exception as failure:
                # The lease is checked last in that transaction: a run taken over may first
                # meet what the new owner wrote (the same consent recorded): still a lost lease.
                if (
                    not isinstance(failure, LeaseLostError)
                    and not leases_repo.release_refused(failure)
                    and await self._holds_lease(run)
                ):
                    raise
                raise LeaseLostError(events.run_id) from failure
        except LeaseLostError:
            log.warning(
                "a run lost its lease before it could store its end; another process has it",
                extra={"thread_id": events.thread_id, "run_id": events.run_id},
            )
            run.observer.stopped()
            events.discard_unsent()
            events.close(suspended=True)
            return
        except Exception as failure:
            if database_lost(self._db, failure):
                # The database went away as the run ended: nothing of the end is sent, and the
                # run stops as if its process had; a replica's takeover closes it as far as its
                # graph got once the database is back (a consent it asked, recorded then).
                log.warning(
                    "the database went away as a run ended; it is closed by a takeover",
                    extra={"thread_id": events.thread_id, "run_id": events.run_id},
                )
                continues = continues_after_a_stop(run)
                run.stop = "database_lost"
                await self.suspend(run, continue_work=continues)
                return
            log.exception(
                "could not store the end of a run",
                extra={"thread_id": events.thread_id, "run_id": events.run_id},
            )
            self._metrics.database_error("run_end")
            outcome = Outcome("failed", "storage_error")
            events.discard_unsent()
            events.record(
                events.make(
                    ErrorEvent,
                    code="storage_error",
                    retryable=True,
                    message="The run's result could not be stored.",
                )
            )
            events.record(events.make(FinalEvent, reason="failed", usage=run.meter.usage))
            run.roll_back = False  # (the end is what counts now; its writes are kept)
            try:
                await self.store_end(run, outcome, values=values)
            except Exception:
                log.exception(
                    "could not record the failure of a run either; it is recovered as a run "
                    "whose process stopped",
                    extra={"thread_id": events.thread_id, "run_id": events.run_id},
                )
                # Nothing of the end was stored, so none of it is sent: the streams end
                # without a final and rejoin where the stored log goes on (the run's recovery
                # numbers its own end from there).
                run.observer.stopped()
                events.discard_unsent()
                events.close(suspended=True)
                if not self._db.is_postgres:  # (there, its lease expires: a takeover)
                    self._left_open.add(events.run_id, continue_work=False)  # (it was ending)
                return
        run.observer.ended(outcome.reason)
        for consent in outcome.consents:
            self._metrics.consent_requested(run.spec.name, consent.kind)
            self._alarm.consent_requested(consent.expires_at)
        events.flush()
        events.close()
        self._ended(events.thread_id, events.run_id)  # the thread is free: a cancel finds nothing

    async def suspend(self, run: RunContext, *, continue_work: bool = True) -> None:
        """Stop without ending: store the events made so far and give up the lease, so the next
        process continues the run from its last checkpoint. With the lease lost, store nothing
        (the process that took the run over owns it now); with the database lost mid-write, only
        give up the lease (on SQLite: the run is left open for this process to close, and to
        continue if ``continue_work``: ``LeftOpenRuns``). Listeners get no ``final``: the
        stream ends, and the client rejoins with ``Last-Event-ID``."""
        events = run.events
        run.observer.stopped()
        await run.progress.settle()
        if run.stop == "lease_lost":
            events.discard_unsent()
            events.close(suspended=True)
            return
        # With the database lost, a write whose answer never came may have committed: storing
        # what the run holds again could store it twice. Only the lease is given up then, so that
        # a takeover starts at once from what the database holds (else it waits for its expiry).
        lost = run.stop == "database_lost"
        if lost:
            events.discard_unsent()
        try:
            async with self._db.write() as conn:
                if not lost:
                    await self.store_events(conn, run)
                await leases_repo.suspend_lease(
                    conn,
                    events.thread_id,
                    run_id=events.run_id,
                    fencing_token=run.fencing_token,
                    now=self._clock(),
                )
        except Exception:
            if not lost:  # (else expected: the database may still be away)
                log.exception(
                    "could not store a suspended run; the lease expires and it is taken over",
                    extra={"thread_id": events.thread_id, "run_id": events.run_id},
                )
            events.discard_unsent()
        events.flush()
        events.close(suspended=True)
        if lost and not self._db.is_postgres:  # (one process: no takeover but its own)
            self._left_open.add(events.run_id, continue_work=continue_work)
