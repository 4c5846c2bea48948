"""The consent gate: a decision is checked, then recorded exactly once, before any resume.

A request decides each consent once (422 ``duplicate_decision``). Then, for each decision,
checks in order, each with its own answer: the approval exists and is the caller's (404
``approval_not_found``); it belongs to the thread (409 ``approval_not_pending``); it was not
left behind on another branch of the thread's history (409 ``consent_superseded``); it is still
pending (409 ``already_decided``, naming the winning decision; 410 ``consent_expired``); its
deadline has not passed (410); the decision is allowed and the edit fits the kind's edit schema
(422, the consent stays pending), and an answer to a raw ``interrupt()`` fits its
``response_schema`` (422 ``invalid_answer``, still pending); LangGraph really waits for it (409
``approval_not_pending``: LangGraph itself accepts any resume silently).

Recording is a compare-and-set ``pending → approved | edited | rejected | answered`` in the caller's
transaction, with its audit record; when it loses, the caller's transaction rolls back and the
loser gets 409 ``already_decided`` with the winner.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from pydantic import ValidationError

from consentry.errors import ConflictError, GoneError, InvalidRequestError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.consents._asks import check_answer, check_edited_args, interrupt_of
from consentry.schemas.approvals import TOOL_CALL, ApprovalStatus
from consentry.schemas.chat import ResumeDecision
from consentry.storage import approvals as approvals_repo
from consentry.storage.approvals import ApprovalRecord
from consentry.storage.audit import record_audit
from consentry.storage.db.database import Database, DbConnection
from consentry.storage.db.postgres_connection import refused_one_row_change
from consentry_graphs.consent import ConsentDecision
from consentry_graphs.registry import GraphSpec

__all__ = [
    "DECIDED",
    "STATUS_OF",
    "already_decided",
    "cancel_consent",
    "check_decision",
    "check_each_consent_once",
    "expire_consent",
    "expired",
    "is_expired",
    "lost_to_another",
    "record_decision",
    "reopen_consent",
    "supersede_consent",
    "superseded",
]

log = logging.getLogger(__name__)

STATUS_OF: dict[str, ApprovalStatus] = {
    "approve": "approved",
    "edit": "edited",
    "reject": "rejected",
    "answer": "answered",
    "respond": "answered",
}
DECIDED = frozenset(STATUS_OF.values())
"""The statuses of a consent a person (or a policy) decided."""


def already_decided(row: ApprovalRecord) -> ConflictError:
    winner = approvals_repo.to_approval(row).decided
    return ConflictError(
        f"This consent was already {row.status}.",
        code="already_decided",
        details={
            "approval_id": row.id,
            "status": row.status,
            "decided": winner.model_dump(mode="json") if winner else None,
        },
    )


def is_expired(row: ApprovalRecord, now: datetime) -> bool:
    """Expired, or still pending past its deadline (the sweeper has not got to it yet)."""
    return row.status == "expired" or (
        row.status == "pending" and row.expires_at is not None and row.expires_at <= now
    )


def expired(row: ApprovalRecord) -> GoneError:
    return GoneError(
        "This consent request has expired; nothing was applied.",
        code="consent_expired",
        details={
            "approval_id": row.id,
            "expired_at": row.expires_at.isoformat() if row.expires_at else None,
        },
    )


def superseded(row: ApprovalRecord) -> ConflictError:
    return ConflictError(
        "This consent was asked on a branch of the thread's history that is no longer its "
        "head (a fork or a state update moved it on); nothing was applied.",
        code="consent_superseded",
        details={"approval_id": row.id, "status": row.status},
    )


def check_each_consent_once(resumes: list[ResumeDecision]) -> None:
    """Refuse a list of decisions that names a consent twice. A rule of the product, not of the
    request's schema: JSON Schema cannot say that the items of a list differ in one field."""
    seen: set[str] = set()
    for resume in resumes:
        if resume.approval_id in seen:
            raise InvalidRequestError(
                f"Consent {resume.approval_id} is decided more than once in this request.",
                code="duplicate_decision",
                details={"approval_id": resume.approval_id},
            )
        seen.add(resume.approval_id)


def check_decision(
    *,
    spec: GraphSpec,
    thread_id: str,
    row: ApprovalRecord | None,
    resume: ResumeDecision,
    pending_ids: frozenset[str],
    now: datetime,
) -> ApprovalRecord:
    """Raise the error a client gets for this decision, or return the approval when the decision
    may be recorded."""
    if row is None:
        raise NotFoundError.of("approval", resume.approval_id)
    if row.thread_id != thread_id:
        raise ConflictError(
            "This consent does not belong to this thread.",
            code="approval_not_pending",
            details={"approval_id": row.id, "thread_id": thread_id},
        )
    if row.status == "superseded":
        raise superseded(row)
    if is_expired(row, now):
        raise expired(row)
    if row.status != "pending":
        raise already_decided(row)
    allowed = row.event.get("allowed_decisions", [])
    if resume.decision not in allowed:
        raise InvalidRequestError(
            f"Decision {resume.decision!r} is not allowed here; allowed: {allowed}.",
            code="decision_not_allowed",
            details={"allowed_decisions": allowed},
        )
    if resume.decision == "answer":
        check_answer(row.event, resume.value)
    if resume.decision == "edit" and row.kind == TOOL_CALL:
        check_edited_args(row.event, resume.edited)
    kind = spec.consent_kinds.get(row.kind)
    if resume.decision == "edit" and kind is not None:
        try:
            kind.parse_edit(resume.edited)
        except ValidationError as exc:
            raise InvalidRequestError(
                "The edit is not valid; the consent is still pending.",
                code="invalid_edit",
                details={
                    "errors": exc.errors(
                        include_url=False, include_context=False, include_input=False
                    )
                },
            ) from None
    if interrupt_of(row) not in pending_ids:
        raise ConflictError(
            "The graph is not waiting for this consent.",
            code="approval_not_pending",
            details={"approval_id": row.id},
        )
    return row


async def record_decision(
    conn: DbConnection,
    owner: Principal,
    *,
    row: ApprovalRecord,
    decision: ConsentDecision,
    run_id: str,
    now: datetime,
    with_next: bool = False,
) -> None:
    """Compare-and-set the approval to the decision, with its audit record. A person's decision
    (``decided_by`` is ``owner``) keeps ``owner``'s display name beside it. ``with_next``: the
    compare-and-set goes with the transaction's next statement on PostgreSQL, and a decision
    that lost fails the transaction there (:func:`lost_to_another`)."""
    status = STATUS_OF[decision.decision]
    won = await approvals_repo.decide_approval(
        conn,
        row.id,
        status=status,
        decided_by=decision.decided_by,
        decided_by_name=owner.name if decision.decided_by == owner.display else None,
        decision=decision.model_dump(mode="json"),
        now=now,
        with_next=with_next,
    )
    if not won:
        current = await approvals_repo.find_approval(conn, owner, row.id)
        raise _lost(current if current is not None else row)
    await record_audit(
        conn,
        owner,
        action="consent_decided",
        thread_id=row.thread_id,
        run_id=run_id,
        approval_id=row.id,
        actor=decision.decided_by,
        now=now,
        data={
            "decision": decision.decision,
            "status": status,
            "edited": decision.edited,
            "value": decision.value,
            "comment": decision.comment,
            "proposal_hash": row.proposal_hash,
        },
    )


def _lost(current: ApprovalRecord) -> ConflictError | GoneError:
    if current.status == "expired":
        return expired(current)
    if current.status == "superseded":
        return superseded(current)  # a fork or a state update moved the thread on
    return already_decided(current)


async def lost_to_another(
    db: Database,
    owner: Principal,
    rows: Sequence[ApprovalRecord],
    error: BaseException,
    *,
    now: datetime,
) -> ConflictError | GoneError | NotFoundError | None:
    """After a transaction of decisions recorded ``with_next`` failed with ``error``: on
    PostgreSQL a compare-and-set that changed no row fails the message it went in (a tenant's
    count, a key's completion, the claim's, which reads it as a refused claim: 409
    ``run_in_progress``). The error to answer when one of them lost: its approval, read again,
    is no longer pending (409 ``already_decided`` naming the winner, ``consent_superseded``),
    past its deadline (410), or gone with its thread (404); None when none did, or when it
    cannot be read again (``error`` is then the answer)."""
    refused = refused_one_row_change(error)
    if not (refused or (isinstance(error, ConflictError) and error.code == "run_in_progress")):
        return None
    try:
        async with db.read() as conn:
            found = [await approvals_repo.find_approval(conn, owner, row.id) for row in rows]
    except Exception:
        log.warning("could not read a decision's approvals again after it failed", exc_info=True)
        return None
    for row, current in zip(rows, found, strict=True):
        if current is None and refused:
            return NotFoundError.of("approval", row.id)
        if current is not None and current.status != "pending":
            return _lost(current)
        if current is not None and is_expired(current, now):
            return expired(current)
    return None


async def expire_consent(
    conn: DbConnection, owner: Principal, *, row: ApprovalRecord, run_id: str, now: datetime
) -> bool:
    """Compare-and-set an overdue approval to ``expired`` (by ``system``), with its audit
    record; False when a decision won."""
    if not await approvals_repo.expire_approval(conn, row.id, now=now):
        return False
    await record_audit(
        conn,
        owner,
        action="consent_expired",
        thread_id=row.thread_id,
        run_id=run_id,
        approval_id=row.id,
        actor="system",
        now=now,
        data={"expires_at": row.expires_at.isoformat() if row.expires_at else None},
    )
    return True


async def reopen_consent(
    conn: DbConnection, owner: Principal, approval_id: str, *, run_id: str, now: datetime
) -> None:
    """An answer the graph raised on (the run failed, the graph still waits): the consent is
    pending again, with a ``consent_requested`` audit record that says why (the approvals feed
    shows it as asked again)."""
    row = await approvals_repo.find_approval(conn, owner, approval_id)
    if row is None or not await approvals_repo.reopen_approval(conn, approval_id):
        return
    await record_audit(
        conn,
        owner,
        action="consent_requested",
        thread_id=row.thread_id,
        run_id=run_id,
        approval_id=row.id,
        actor="system",
        now=now,
        data={
            "kind": row.kind,
            "proposal_hash": row.proposal_hash,
            "expires_at": row.expires_at.isoformat() if row.expires_at else None,
            "reopened": "the graph failed on the answer",
            "refused": (row.decision or {}).get("value"),
        },
    )


async def cancel_consent(
    conn: DbConnection, owner: Principal, *, row: ApprovalRecord, now: datetime
) -> None:
    """A pending approval the graph no longer waits for becomes ``cancelled``, audited."""
    if await approvals_repo.cancel_approval(conn, row.id, now=now):
        await record_audit(
            conn,
            owner,
            action="consent_cancelled",
            thread_id=row.thread_id,
            approval_id=row.id,
            actor="system",
            now=now,
            data={"reason": "the graph no longer waits for it"},
        )


async def supersede_consent(
    conn: DbConnection,
    owner: Principal,
    *,
    row: ApprovalRecord,
    run_id: str | None,
    checkpoint_id: str,
    now: datetime,
    reason: str = "the thread's head moved to another branch",
) -> bool:
    """A pending approval on a branch the thread's head left (for the branch from
    ``checkpoint_id``) becomes ``superseded``, audited; False when it was no longer pending."""
    if not await approvals_repo.supersede_approval(conn, row.id, now=now):
        return False
    await record_audit(
        conn,
        owner,
        action="consent_superseded",
        thread_id=row.thread_id,
        run_id=run_id,
        approval_id=row.id,
        actor=owner.display,
        now=now,
        data={
            "reason": reason,
            "from_checkpoint": checkpoint_id,
        },
    )
    return True
