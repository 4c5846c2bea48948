"""The consents a run asks: an ``interrupt()`` value becomes a typed ``consent`` event, and its
approval record is stored with its ``consent_requested`` audit record."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from backend.principal import Principal
from backend.runtime.event_stream import RunEventStream
from backend.schemas.events import ConsentEvent
from backend.storage import approvals as approvals_repo
from backend.storage.audit import record_audit
from graphs.consent import ConsentRequest, proposal_hash
from graphs.registry import GraphSpec

__all__ = ["consent_event", "store_consent"]


def consent_event(
    events: RunEventStream,
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
            "interrupt() values must be ConsentRequest payloads; use graphs.consent.ConsentKind"
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
    conn: AsyncConnection, owner: Principal, consent: ConsentEvent, *, now: datetime
) -> Any:
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
    return await approvals_repo.find_approval(conn, owner, consent.approval_id)
