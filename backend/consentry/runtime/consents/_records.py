"""The consents a run asks: an ``interrupt()`` value becomes a typed ``consent`` event, and its
approval record is stored with its ``consent_requested`` audit record. And what a new run does
with the consents its thread already has: resume with the decisions a stopped run carried, and
close the pending ones before a new message."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from consentry.errors import ConflictError
from consentry.principal import Principal
from consentry.runtime.consents._asks import (
    ConsentAsk,
    ConsentDeadlines,
    graph_resumes,
    interrupt_of,
)
from consentry.runtime.consents._gate import (
    cancel_consent,
    expire_consent,
    is_expired,
    record_decision,
    supersede_consent,
)
from consentry.schemas.chat import ChatRequest
from consentry.schemas.events import ConsentEvent, Event
from consentry.storage import approvals as approvals_repo
from consentry.storage.approvals import ApprovalRecord
from consentry.storage.audit import record_audit
from consentry.storage.db.database import DbConnection
from consentry_graphs.consent import ConsentDecision, proposal_hash

__all__ = [
    "ConsentThread",
    "EventNumbering",
    "SettledConsents",
    "consent_event",
    "record_consent",
    "recorded_decisions",
    "settle_pending",
    "store_consent",
    "supersede_pending",
]


class EventNumbering(Protocol):
    """What numbers a run's events (``runs.RunEventStream``)."""

    def make(self, event_type: type[Event], **fields: Any) -> Event: ...


class ConsentThread(Protocol):
    """The thread a run is for, as far as its consents go (``runs.RunTarget``)."""

    @property
    def thread_id(self) -> str: ...
    @property
    def is_new(self) -> bool: ...
    @property
    def stopped_half_way(self) -> bool: ...


def consent_event(
    events: EventNumbering, ask: ConsentAsk, *, deadlines: ConsentDeadlines, now: datetime
) -> ConsentEvent:
    """The ``consent`` event of what an interrupt asks (numbered in the run's stream, not yet
    recorded; ``read_asks``)."""
    event = events.make(
        ConsentEvent,
        approval_id=ask.approval_id,
        interrupt_id=ask.interrupt_id,
        kind=ask.kind,
        title=ask.title,
        proposal=ask.proposal,
        allowed_decisions=list(ask.allowed_decisions),
        value=ask.value,
        response_schema=ask.response_schema,
        expires_at=deadlines.expires_at(ask, now),
    )
    assert isinstance(event, ConsentEvent)
    return event


async def store_consent(
    conn: DbConnection, owner: Principal, consent: ConsentEvent, *, now: datetime
) -> ApprovalRecord:
    """:func:`record_consent`, and the new row."""
    await record_consent(conn, owner, consent, now=now)
    row = await approvals_repo.find_approval(conn, owner, consent.approval_id)
    assert row is not None  # inserted above, in this transaction
    return row


async def record_consent(
    conn: DbConnection, owner: Principal, consent: ConsentEvent, *, now: datetime
) -> None:
    """Insert the approval record (with its proposal hash) and its audit record."""
    digest = proposal_hash(consent.proposal)
    await approvals_repo.insert_approval(conn, owner, consent, proposal_hash=digest, now=now)
    await record_audit(
        conn,
        owner,
        action="consent_requested",
        thread_id=consent.thread_id,
        run_id=consent.run_id,
        approval_id=consent.approval_id,
        actor="system",
        now=now,
        data={
            "kind": consent.kind,
            "proposal_hash": digest,
            "expires_at": consent.expires_at.isoformat() if consent.expires_at else None,
        },
    )


async def recorded_decisions(
    conn: DbConnection, target: ConsentThread, waiting: frozenset[str]
) -> dict[str, Any]:
    """Decisions (or expiries) already recorded for consents the graph still waits for: the
    run that carried them stopped half-way, so the next run resumes with them."""
    if not target.stopped_half_way or not waiting:
        return {}
    rows = await approvals_repo.closed_approvals(conn, target.thread_id, sorted(waiting))
    return graph_resumes(
        (row, ConsentDecision.model_validate(approvals_repo.recorded_decision(row)))
        for row in rows
        if row.decision and interrupt_of(row) in waiting
    )


@dataclass
class SettledConsents:
    """The consents a new message closed: the graph's resume values, and each row with its
    decision (counted once the transaction commits)."""

    closed: list[tuple[ApprovalRecord, ConsentDecision]] = field(default_factory=list)

    def add(self, row: ApprovalRecord, decision: ConsentDecision) -> None:
        self.closed.append((row, decision))

    @property
    def resumes(self) -> dict[str, Any]:
        return graph_resumes(self.closed)


async def settle_pending(
    conn: DbConnection,
    owner: Principal,
    target: ConsentThread,
    request: ChatRequest,
    run_id: str,
    waiting: frozenset[str],
    now: datetime,
) -> SettledConsents:
    """Before a message, every consent of the thread is closed: overdue ones expire, live ones
    are rejected when the request says so (else 409 ``consent_pending``), ones the graph no
    longer waits for are cancelled. Returns the resume values that take the graph down those
    paths."""
    settled = SettledConsents()
    if target.is_new:
        return settled
    pending = await approvals_repo.pending_approvals(conn, target.thread_id)
    live = [row for row in pending if not is_expired(row, now) and interrupt_of(row) in waiting]
    unrejectable = [r for r in live if "reject" not in r.event.get("allowed_decisions", [])]
    if live and (request.on_pending_consent != "reject" or unrejectable):
        raise ConflictError(
            "This thread is waiting for an answer to a question the graph asked; answer it "
            "first (a message cannot reject it)."
            if unrejectable
            else "This thread is waiting for a decision on a consent request; decide it first, "
            'or send `"on_pending_consent": "reject"`.',
            code="consent_pending",
            details={"approval_id": live[0].id, "pending": [row.id for row in live]},
        )
    for row in pending:
        if interrupt_of(row) not in waiting:
            await cancel_consent(conn, owner, row=row, now=now)
        elif is_expired(row, now):
            await expire_consent(conn, owner, row=row, run_id=run_id, now=now)
            settled.add(
                row, ConsentDecision(approval_id=row.id, decision="expire", decided_by="system")
            )
        else:
            rejection = ConsentDecision(
                approval_id=row.id,
                decision="reject",
                comment="Rejected by a new message.",
                decided_by=owner.display,
            )
            await record_decision(conn, owner, row=row, decision=rejection, run_id=run_id, now=now)
            settled.add(row, rejection)
    return settled


async def supersede_pending(
    conn: DbConnection,
    owner: Principal,
    thread_id: str,
    *,
    run_id: str | None,
    checkpoint_id: str,
    now: datetime,
    asked_by: str | None = None,
) -> list[str]:
    """Before the thread's head moves to a branch from ``checkpoint_id`` (a fork, a state
    update), each consent still pending on the branch it leaves ends ``superseded``, audited:
    never left pending, never decided later. ``asked_by``: only those that run asked (a run
    rolled back, whose writes go; the head goes back to where it started, which may still wait
    for consents asked before it). Returns their ids."""
    superseded: list[str] = []
    reason = "the run that asked it was rolled back" if asked_by else None
    for row in await approvals_repo.pending_approvals(conn, thread_id):
        if asked_by is not None and row.run_id != asked_by:
            continue
        if await supersede_consent(
            conn,
            owner,
            row=row,
            run_id=run_id,
            checkpoint_id=checkpoint_id,
            now=now,
            **({"reason": reason} if reason else {}),
        ):
            superseded.append(row.id)
    return superseded
