"""Runs whose process died: finding them, and closing each one as far as it got.

A process can die (SIGKILL, power loss, a frozen replica whose lease expired) anywhere in a run:
before its graph wrote a checkpoint, between a checkpoint and the events that tell of it, or between
the graph's stop at an interrupt and the run's closing transaction, which stores the interrupt with
its consent (an interrupt stored without one: by a run suspended at shutdown, a consent policy's
decision beside it, a run that failed at it, or an earlier version of Consentry, is recovered as
below). The process that takes the run over (the next one to start on SQLite; any replica once the
lease expired on PostgreSQL) reads what the graph's checkpoint says (:func:`read_recovery`) and
closes the run from it, in one transaction fenced by the dead run's token (:func:`close_dead_run`):

- the run's ``run_started`` is stored if nothing of the run was;
- the user messages the run gave its graph, and the replies its checkpoint holds, are added to
  the transcript (the replies also as ``message`` events) where they are missing;
- **every interrupt the graph waits for without an approval becomes a pending consent** (its
  ``consent`` event, approval and audit records), as if the run had ended normally; on a thread
  with a consent policy, the run that continues it asks again and the policy decides;
- the run ends as its graph did: ``interrupted`` when consents wait, ``completed`` (``expired``
  for an expiry's run) when its graph got to its end; otherwise ``failed`` with an ``error``
  ``server_restarted``, and the run that continues its work (``runtime.continuation``) is claimed
  in the same transaction (``RunService.take_over_dead_runs``).

Its events are numbered after the thread's last stored event: no number is skipped, and none a
client saw is reused (``token`` events carry the number of the stored event before them).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import uuid4

from langchain_core.messages import HumanMessage
from langgraph.types import Interrupt

from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.consents import (
    ConsentDeadlines,
    consent_event,
    read_asks,
    record_consent,
    recorded_decisions,
)
from consentry.runtime.graph_state import read_values_as_json
from consentry.runtime.replicas import LeaseKeeper
from consentry.runtime.runs.execute import (
    NOWHERE,
    SEQ_RESERVATION,
    GraphInput,
    GraphPosition,
    RunEventStream,
    checkpoint_transcript,
    load_inputs,
)
from consentry.runtime.runs.start import RunTarget, continuation
from consentry.schemas.events import (
    ConsentEvent,
    ErrorEvent,
    FinalEvent,
    MessageEvent,
    RunStartedEvent,
    TerminalReason,
)
from consentry.schemas.threads import ThreadStatus
from consentry.storage import approvals as approvals_repo
from consentry.storage import events as events_repo
from consentry.storage import leases as leases_repo
from consentry.storage import runs as runs_repo
from consentry.storage import webhooks as webhooks_repo
from consentry.storage.db.database import Database, DbConnection
from consentry.storage.leases import UnfinishedRun
from consentry.storage.transcript import TranscriptEntry, add_to_transcript, kept_message_ids
from consentry_graphs.declared_kinds import GraphDefinitionError
from consentry_graphs.registry import CompiledGraph, GraphSpec

__all__ = ["ClosedRun", "Recovery", "close_dead_run", "dead_runs", "read_recovery"]

log = logging.getLogger(__name__)


async def dead_runs(db: Database, *, lease_expired_by: datetime | None) -> list[UnfinishedRun]:
    """Runs that stopped without ending (their process crashed, stalled or shut down) and
    whose lease expired by ``lease_expired_by`` (None: every such run, when this process is
    the only one, as on SQLite)."""
    async with db.read() as conn:
        return await leases_repo.unfinished_runs(conn, lease_expired_by=lease_expired_by)


@dataclass(frozen=True)
class Recovery:
    """What a dead run's graph checkpoint says: how the run ends and what continues it."""

    position: GraphPosition = NOWHERE
    continuation: list[GraphInput] = field(default_factory=list)
    """The inputs of the run that continues the dead one's work ([]: nothing is left)."""
    unasked: tuple[Interrupt, ...] = ()
    """Interrupts the graph waits for that have no approval: recorded as consents on closing."""
    replies: list[TranscriptEntry] = field(default_factory=list)
    """The assistant messages in the checkpoint the dead run wrote."""
    spec: GraphSpec | None = None
    """None: the thread's graph is no longer served (the run is closed ``failed``)."""
    deadlines: ConsentDeadlines = field(default_factory=lambda: ConsentDeadlines(timedelta(0)))
    values: dict[str, Any] | None = None
    """The thread's state values, for a run whose end is posted to its webhook (JSON-safe;
    None when they could not be read: the post goes without, the run is closed regardless)."""


async def read_recovery(
    db: Database,
    graph: CompiledGraph,
    target: RunTarget,
    run: UnfinishedRun,
    *,
    position: GraphPosition,
    deadlines: ConsentDeadlines,
) -> Recovery:
    """How dead run ``run`` (a row of ``dead_runs``) ends, from its graph's ``position``."""
    async with db.read() as conn:
        recorded = await recorded_decisions(conn, target, position.waiting)
        # A reviewed batch of tool calls is asked as `<id>-0`, `<id>-1`...
        firsts = [*position.waiting, *(f"{i}-0" for i in position.waiting)]
        known = await approvals_repo.existing_approval_ids(conn, sorted(firsts))
    inputs = load_inputs(run.inputs) if run.inputs is not None else None
    todo = continuation(position, recorded, run_id=run.id, inputs=inputs)
    unasked = tuple(
        i for i in position.interrupts if i.id not in known and f"{i.id}-0" not in known
    )
    if unasked and target.consent_policy != "ask":
        # The run that continues asks them again (same ids), and the thread's policy decides.
        todo, unasked = todo or [None], ()
    replies: list[TranscriptEntry] = []
    if position.written_by == run.id and target.transcript_kept:
        replies = [
            e for e in await checkpoint_transcript(graph, target.thread_id) if e.role == "assistant"
        ]
    values = None
    if run.webhook is not None and not todo:  # (a run continued posts when its successor ends)
        values = await read_values_as_json(graph, target.thread_id, run_id=run.id)
    return Recovery(position, todo, unasked, replies, target.spec, deadlines, values)


@dataclass(frozen=True)
class ClosedRun:
    status: ThreadStatus
    """The thread's status once the dead run is closed (``awaiting_consent`` or ``idle``)."""
    reason: TerminalReason
    consents: list[ConsentEvent]
    """The consents recorded for interrupts that had none."""


async def close_dead_run(
    conn: DbConnection,
    run: UnfinishedRun,
    recovery: Recovery,
    *,
    leases: LeaseKeeper,
    clock: Clock,
) -> ClosedRun:
    """In the caller's transaction: end dead run ``run`` as :class:`Recovery` says and free its
    thread. Fenced by the dead run's token: when two processes recover it at once, one closes it
    and the other gets ``LeaseLostError`` having written nothing."""
    now = clock()
    owner = Principal(run.tenant, run.user_id)
    # First the compare-and-set that takes the lease over with a new fencing token: a second
    # process recovering the same run fails here (LeaseLostError) and writes nothing, and the old
    # process, if it still runs, can write nothing more.
    token = await leases_repo.seize_lease(
        conn,
        run.thread_id,
        run_id=run.id,
        fencing_token=run.fencing_token,
        lease_owner=leases.owner,
        lease_expires_at=leases.expires_at(now),
    )
    after = max(await events_repo.last_stored_seq(conn, run.thread_id), run.pruned_through)
    events = RunEventStream(
        thread_id=run.thread_id,
        run_id=run.id,
        last_seq=after,
        reserved_until=after + SEQ_RESERVATION,
        clock=clock,
    )
    if await events_repo.first_run_seq(conn, run.thread_id, run.id) is None:
        events.record(events.make(RunStartedEvent, graph=run.graph, trigger=run.trigger))
    await _complete_transcript(conn, events, run, recovery.replies, now)
    consents = _consents(events, recovery, now)
    reason, error_code = _ending(run, recovery, consents)
    if error_code is not None:
        events.record(
            events.make(
                ErrorEvent,
                code=error_code,
                retryable=True,
                message="The server stopped during this run.",
            )
        )
    events.record(events.make(FinalEvent, reason=reason))
    await events_repo.insert_events(
        conn, events, events.take_durable(), fencing_token=token, now=now
    )
    for consent in consents:
        await record_consent(conn, owner, consent, now=now)
    pending = await approvals_repo.pending_approvals(conn, run.thread_id)
    status: ThreadStatus = "awaiting_consent" if pending else "idle"
    await leases_repo.release_thread(
        conn,
        run.thread_id,
        run_id=run.id,
        fencing_token=token,
        status=status,
        reason=reason,
        last_seq=events.last_seq,
        now=now,
    )
    await runs_repo.record_run_end(
        conn,
        owner,
        thread_id=run.thread_id,
        run_id=run.id,
        reason=reason,
        error_code=error_code,
        now=now,
    )
    if run.webhook is not None and not recovery.continuation:
        # Its end is posted as a run's that ended here; one continued hands its webhook to the
        # run that continues it (``_recovery``), whose end is the work's.
        await webhooks_repo.queue_delivery(
            conn,
            delivery_id=str(uuid4()),
            run_id=run.id,
            thread_id=run.thread_id,
            tenant=run.tenant,
            graph=run.graph,
            reason=reason,
            error_code=error_code,
            values=recovery.values,
            now=now,
        )
    return ClosedRun(status, reason, consents)


async def _complete_transcript(
    conn: DbConnection,
    events: RunEventStream,
    run: UnfinishedRun,
    replies: list[TranscriptEntry],
    now: datetime,
) -> None:
    """Add the messages the run was given, then the replies its graph stored, where missing."""
    given: list[TranscriptEntry] = []
    if run.trigger == "message" and run.inputs is not None:
        for item in load_inputs(run.inputs):
            if isinstance(item, dict):
                given.extend(
                    TranscriptEntry(str(m.id), "user", m.text)
                    for m in item.get("messages", [])
                    if isinstance(m, HumanMessage)
                )
    said = [*given, *replies]
    kept = await kept_message_ids(conn, run.thread_id, [e.message_id for e in said])
    missing = [e for e in said if e.message_id not in kept]
    for entry in missing:
        if entry.role == "assistant":
            events.record(
                events.make(MessageEvent, message_id=entry.message_id, content=entry.content)
            )
    await add_to_transcript(conn, run.thread_id, missing, now=now)


def _consents(events: RunEventStream, recovery: Recovery, now: datetime) -> list[ConsentEvent]:
    if recovery.spec is None:
        return []
    consents: list[ConsentEvent] = []
    for interrupt in recovery.unasked:
        try:
            asks = read_asks(recovery.spec, interrupt)
        except GraphDefinitionError:
            log.exception(
                "a dead run's graph waits for an interrupt it cannot ask (a graph bug)",
                extra={"thread_id": events.thread_id, "run_id": events.run_id},
            )
            continue
        for ask in asks:
            consent = consent_event(events, ask, deadlines=recovery.deadlines, now=now)
            events.record(consent)
            consents.append(consent)
    return consents


def _ending(
    run: UnfinishedRun, recovery: Recovery, consents: list[ConsentEvent]
) -> tuple[TerminalReason, str | None]:
    """The dead run's terminal reason, and its error code."""
    if recovery.continuation:
        return "failed", "server_restarted"  # the run that continues it finishes its work
    if consents or recovery.position.waiting:
        return "interrupted", None
    if recovery.spec is not None and recovery.position.written_by == run.id:
        return ("expired" if run.trigger == "expiry" else "completed"), None
    return "failed", "server_restarted"
