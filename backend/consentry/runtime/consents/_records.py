"""The consents a run asks: an ``interrupt()`` value becomes a typed ``consent`` event, and its
approval record is stored with its ``consent_requested`` audit record. And what a new run does
with the consents its thread already has: resume with the decisions a stopped run carried, and
close the pending ones before a new message."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from pydantic import ValidationError

from consentry.errors import ConflictError
from consentry.principal import Principal
from consentry.runtime.consents._gate import cancel_consent, expire_consent, record_decision
from consentry.schemas.chat import ChatRequest
from consentry.schemas.events import ConsentEvent, Event
from consentry.storage import approvals as approvals_repo
from consentry.storage.approvals import ApprovalRecord
from consentry.storage.audit import record_audit
from consentry.storage.database import DbConnection
from consentry_graphs.consent import ConsentDecision, ConsentRequest, proposal_hash
from consentry_graphs.registry import GraphSpec

__all__ = [
    "ConsentThread",
    "EventNumbering",
    "SettledConsents",
    "consent_event",
    "recorded_decisions",
    "settle_pending",
    "store_consent",
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
    events: EventNumbering,
    spec: GraphSpec,
    *,
    approval_id: str,
    value: Any,
    default_ttl: timedelta,
    now: datetime,
) -> ConsentEvent:
    """The ``consent`` event of one interrupt (numbered in the run's stream, not yet recorded).
    A value that is not a ``ConsentRequest`` of a kind the graph registered is a graph bug."""
    try:
        request = ConsentRequest.model_validate(value)
    except ValidationError as exc:
        raise TypeError(
            "interrupt() values must be ConsentRequest payloads; "
            "use consentry_graphs.consent.ConsentKind"
        ) from exc
    if request.kind not in spec.consent_kinds:
        # Unregistered kinds cannot have their decisions checked before the graph resumes.
        raise TypeError(f"consent kind {request.kind!r} is not in the graph's consent_kinds")
    ttl = timedelta(seconds=request.ttl_seconds) if request.ttl_seconds else default_ttl
    event = events.make(
        ConsentEvent,
        approval_id=approval_id,
        kind=request.kind,
        title=request.title,
        proposal=request.proposal,
        allowed_decisions=request.allowed_decisions,
        expires_at=now + ttl,
    )
    assert isinstance(event, ConsentEvent)
    return event


async def store_consent(
    conn: DbConnection, owner: Principal, consent: ConsentEvent, *, now: datetime
) -> ApprovalRecord:
    """Insert the approval record (with its proposal hash) and its audit record; the new row."""
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
            "expires_at": consent.expires_at.isoformat(),
        },
    )
    row = await approvals_repo.find_approval(conn, owner, consent.approval_id)
    assert row is not None  # inserted above, in this transaction
    return row


async def recorded_decisions(
    conn: DbConnection, target: ConsentThread, waiting: frozenset[str]
) -> dict[str, Any]:
    """Decisions (or expiries) already recorded for consents the graph still waits for: the
    run that carried them stopped half-way, so the next run resumes with them."""
    if not target.stopped_half_way or not waiting:
        return {}
    rows = await approvals_repo.closed_approvals(conn, target.thread_id, sorted(waiting))
    return {row.id: approvals_repo.resume_value(row) for row in rows if row.decision}


@dataclass
class SettledConsents:
    """The consents a new message closed: the graph's resume values, and each row with its
    decision (counted once the transaction commits)."""

    resumes: dict[str, Any] = field(default_factory=dict)
    closed: list[tuple[ApprovalRecord, ConsentDecision]] = field(default_factory=list)

    def add(self, row: ApprovalRecord, decision: ConsentDecision) -> None:
        self.resumes[row.id] = decision.model_dump(mode="json")
        self.closed.append((row, decision))


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
    live = [row for row in pending if row.expires_at > now and row.id in waiting]
    if live and (
        request.on_pending_consent != "reject"
        or any("reject" not in row.event.get("allowed_decisions", []) for row in live)
    ):
        raise ConflictError(
            "This thread is waiting for a decision on a consent request; decide it first, "
            'or send `"on_pending_consent": "reject"`.',
            code="consent_pending",
            details={"approval_id": live[0].id, "pending": [row.id for row in live]},
        )
    for row in pending:
        if row.id not in waiting:
            await cancel_consent(conn, owner, row=row, now=now)
        elif row.expires_at <= now:
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
