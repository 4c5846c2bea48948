"""An approval's row (:class:`ApprovalRecord`), the columns and ``SELECT`` it is read with, the
condition of a live consent (:func:`live_at`), and what the API shows of a row: the
:class:`~consentry.schemas.approvals.Approval` (:func:`to_approval`) and the graph's resume value
without the decider's name (:func:`recorded_decision`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from consentry.principal import Principal
from consentry.schemas.approvals import (
    Approval,
    ApprovalStatus,
    RecordedDecision,
)
from consentry.storage.tables import approvals

DECIDED_BY_NAME = "decided_by_name"


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """An approval's row, as stored (``tables.approvals``)."""

    id: str
    thread_id: str
    run_id: str
    tenant: str
    user_id: str
    kind: str
    status: ApprovalStatus
    event: dict[str, Any]
    """The ``consent`` event that asked, as sent (``ConsentEvent``, JSON)."""
    created_at: datetime
    expires_at: datetime | None
    """None: no deadline."""
    decided_at: datetime | None
    decided_by: str | None
    decision: dict[str, Any] | None
    """The graph's resume value, with ``decided_by_name`` (see ``storage.approvals``' docstring)."""
    proposal_hash: str
    edited: dict[str, Any] | None
    comment: str | None


_COLUMNS = tuple(approvals.c[field.name] for field in fields(ApprovalRecord))
"""The columns of an :class:`ApprovalRecord`, in its fields' order: a row of them is
``ApprovalRecord(*row)`` (by position: a quarter of the cost by name, see ``storage.events``)."""
_SELECT = sa.select(*_COLUMNS)


def live_at(now: datetime | sa.BindParameter[datetime]) -> sa.ColumnElement[bool]:
    """Not past its deadline at ``now`` (a consent without one never is)."""
    return sa.or_(approvals.c.expires_at.is_(None), approvals.c.expires_at > now)


def _owned(owner: Principal) -> sa.ColumnElement[bool]:
    return sa.and_(approvals.c.tenant == owner.tenant, approvals.c.user_id == owner.user)


def to_approval(row: ApprovalRecord) -> Approval:
    event = row.event
    decided = None
    if row.status != "pending":
        recorded = row.decision or {}
        decided = RecordedDecision(
            status=row.status,
            decision=recorded.get("decision"),
            decided_by=row.decided_by,
            decided_by_name=recorded.get(DECIDED_BY_NAME),
            decided_at=row.decided_at,
            edited=row.edited,
            value=recorded.get("value"),
            comment=row.comment,
        )
    return Approval(
        approval_id=row.id,
        thread_id=row.thread_id,
        run_id=row.run_id,
        kind=row.kind,
        title=event["title"],
        proposal=event["proposal"],
        proposal_hash=row.proposal_hash,
        allowed_decisions=event["allowed_decisions"],
        interrupt_id=event.get("interrupt_id") or row.id,
        value=event.get("value"),
        response_schema=event.get("response_schema"),
        created_at=row.created_at,
        expires_at=row.expires_at,
        status=row.status,
        decided=decided,
    )


def recorded_decision(row: ApprovalRecord) -> dict[str, Any] | None:
    """The recorded decision (a ``ConsentDecision``, without the decider's name)."""
    if not row.decision:
        return None
    return {key: value for key, value in row.decision.items() if key != DECIDED_BY_NAME}
