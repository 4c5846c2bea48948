"""Decisions and expiries: a consent is decided (or expires) exactly once, before any resume.

A decision reaches LangGraph only after the consent gate recorded it (``consents``: a
compare-and-set in the same transaction that claims the thread): a double click or a second tab
gets 409 naming the winner, never a second resume. An expiry is a decision the sweeper makes
when the deadline passed; a decision and the sweeper can never both win.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import uuid4

from langgraph.types import Command

from consentry.errors import ConflictError, GoneError, InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.consents import (
    DECIDED,
    ExpiryAlarm,
    already_decided,
    cancel_consent,
    check_decision,
    check_each_consent_once,
    expire_consent,
    expired,
    graph_resumes,
    interrupt_of,
    is_expired,
    lost_to_another,
    record_decision,
    recorded_decisions,
    superseded,
)
from consentry.runtime.runs.execute import ActiveRun, ClaimHold, GraphPosition, run_id_for
from consentry.runtime.runs.start._continuation import continuation
from consentry.runtime.runs.start._launcher import Launcher
from consentry.runtime.runs.start._targets import RunTarget, refuse_if_running
from consentry.schemas.approvals import TOOL_CALL
from consentry.schemas.chat import ResumeDecision
from consentry.storage import approvals as approvals_repo
from consentry.storage.approvals import ApprovalRecord
from consentry_graphs.consent import ConsentDecision

__all__ = ["expire_consent_run", "expire_raw_interrupt", "start_decisions"]


async def start_decisions(
    launcher: Launcher,
    alarm: ExpiryAlarm,
    owner: Principal,
    target: RunTarget,
    resumes: list[ResumeDecision],
    key: ClaimHold | None,
) -> ActiveRun:
    check_each_consent_once(resumes)
    now = launcher.clock()
    if target.status == "running":
        # A decision that lost a race to another one is told who won (the winner's run is what
        # is running), and one on an expired consent that it expired (the run going may be
        # its expired path), not merely that a run is going.
        async with launcher.db.read() as conn:
            for resume in resumes:
                row = await approvals_repo.find_approval(conn, owner, resume.approval_id)
                if row is not None and row.status in DECIDED:
                    raise already_decided(row)  # approved, edited or rejected
                if row is not None and row.status == "superseded":
                    raise superseded(row)  # a fork left it behind (its run may be this one)
                if row is not None and row.thread_id == target.thread_id and is_expired(row, now):
                    raise expired(row)
        refuse_if_running(target)
    # What the graph waits for is read first: a row read after it that is still pending was
    # pending in that checkpoint too, so a concurrent winner shows as `already_decided`.
    position = await launcher.executor.position(target.spec, target.thread_id)
    waiting = position.waiting
    async with launcher.db.read() as conn:
        if len(resumes) == 1:  # the usual: one statement
            found, pending = await approvals_repo.find_with_pending(
                conn, owner, resumes[0].approval_id, target.thread_id
            )
            rows = [found]
        else:
            rows = [await approvals_repo.find_approval(conn, owner, r.approval_id) for r in resumes]
            pending = await approvals_repo.pending_approvals(conn, target.thread_id)
        recorded = await recorded_decisions(conn, target, waiting)
    first = rows[0]
    if (
        len(resumes) == 1
        and first is not None
        and first.status != "pending"
        and _same_decision(first, resumes[0])
        and target.stopped_half_way
    ):
        remaining = continuation(position, recorded, run_id=None, inputs=None)
        if remaining:
            return await launcher.continue_with(
                owner, target, remaining, "resume", key, position=position
            )
    if not pending and all(row is None for row in rows):
        raise ConflictError(
            "This thread has no pending consent to decide.",
            code="no_pending_consent",
            details={"thread_id": target.thread_id},
        )
    try:
        checked = [
            check_decision(
                spec=target.spec,
                thread_id=target.thread_id,
                row=row,
                resume=resume,
                pending_ids=waiting,
                now=now,
            )
            for row, resume in zip(rows, resumes, strict=True)
        ]
    except GoneError:
        alarm.overdue()  # the sweeper expires it and resumes the graph's expired path
        raise
    decisions = [
        ConsentDecision(
            approval_id=resume.approval_id,
            decision=resume.decision,
            edited=resume.edited,
            value=resume.value,
            comment=resume.comment,
            decided_by=owner.display,
        )
        for resume in resumes
    ]
    _decided_together(checked, pending)
    run_id = run_id_for(key)
    values = graph_resumes(zip(checked, decisions, strict=True))
    command: Command[Any] = Command(resume={**recorded, **values})
    try:
        async with launcher.db.write() as conn:
            for row, decision in zip(checked, decisions, strict=True):
                # The compare-and-set goes in the claim's message: one that lost fails it.
                await record_decision(
                    conn, owner, row=row, decision=decision, run_id=run_id, now=now, with_next=True
                )
            claim = await launcher.claim(conn, owner, target, run_id, "resume", now, [command], key)
    except Exception as error:
        lost = await lost_to_another(launcher.db, owner, checked, error, now=now)
        if lost is not None:
            raise lost from error
        raise
    launcher.count_decisions(list(zip(checked, decisions, strict=True)), now)
    return await launcher.launch(
        owner,
        target,
        run_id,
        claim,
        "resume",
        [command],
        resumed=position.asking,
        position=position,
    )


async def expire_consent_run(
    launcher: Launcher, owner: Principal, target: RunTarget, row: ApprovalRecord
) -> ActiveRun | None:
    """Expire one overdue consent and resume its graph down the expired path. None when a
    decision won the race, the graph no longer waits for it (it is cancelled), or the thread
    is busy (the sweeper tries again)."""
    now = launcher.clock()
    position = await launcher.executor.position(target.spec, target.thread_id)
    try:
        return await _expire_in(launcher, owner, target, row, str(uuid4()), position, now)
    except _ThreadBusyError:
        return None


async def expire_raw_interrupt(
    launcher: Launcher, owner: Principal, target: RunTarget, row: ApprovalRecord
) -> bool:
    """A raw ``interrupt()`` nobody answered in time: the approval ends ``expired`` (audited) and
    the graph is not resumed, since any value would be invented. The thread reads ``idle`` once
    no consent of it is live; its next message starts the graph from that input. False when an
    answer won the race."""
    now = launcher.clock()
    position = await launcher.executor.position(target.spec, target.thread_id)
    async with launcher.db.write() as conn:
        if row.id not in position.waiting:
            await cancel_consent(conn, owner, row=row, now=now)
            return False
        if not await expire_consent(conn, owner, row=row, run_id=row.run_id, now=now):
            return False
    launcher.metrics.expired(row.kind)
    return True


async def _expire_in(
    launcher: Launcher,
    owner: Principal,
    target: RunTarget,
    row: ApprovalRecord,
    run_id: str,
    position: GraphPosition,
    now: datetime,
) -> ActiveRun | None:
    waiting, interrupt_id = position.waiting, interrupt_of(row)
    async with launcher.db.write() as conn:
        if interrupt_id not in waiting:
            await cancel_consent(conn, owner, row=row, now=now)
            return None
        if not await expire_consent(conn, owner, row=row, run_id=run_id, now=now):
            return None
        # The other tool calls of a reviewed batch expire with it (the same deadline).
        batch = [row]
        for other in await approvals_repo.pending_approvals(conn, target.thread_id):
            if interrupt_of(other) == interrupt_id and await expire_consent(
                conn, owner, row=other, run_id=run_id, now=now
            ):
                batch.append(other)
        recorded = await recorded_decisions(conn, target, waiting - {interrupt_id})
        expiries = graph_resumes(
            (r, ConsentDecision(approval_id=r.id, decision="expire", decided_by="system"))
            for r in batch
        )
        command: Command[Any] = Command(resume={**recorded, **expiries})
        claim = await launcher.try_claim(
            conn, owner, target, run_id, "expiry", now, ("awaiting_consent",), [command]
        )
        if claim is None:
            raise _ThreadBusyError  # roll the expiry back: it happens when the thread is free
    launcher.metrics.expired(row.kind)
    return await launcher.launch(
        owner,
        target,
        run_id,
        claim,
        "expiry",
        [command],
        resumed=position.asking,
        position=position,
    )


def _decided_together(checked: list[ApprovalRecord], pending: list[ApprovalRecord]) -> None:
    """The tool calls of one reviewed batch are decided in one request: LangChain's middleware
    is resumed with all their decisions at once (422 ``decide_together`` names the batch)."""
    deciding = {row.id for row in checked}
    for row in checked:
        if row.kind != TOOL_CALL:
            continue
        batch = sorted(p.id for p in pending if interrupt_of(p) == interrupt_of(row))
        if not set(batch) <= deciding:
            raise InvalidRequestError(
                f"This tool call is reviewed with {len(batch) - 1} other(s) the model asked for "
                "at the same time; decide them together, in one request.",
                code="decide_together",
                details={"approval_ids": batch},
            )


def _same_decision(row: ApprovalRecord, resume: ResumeDecision) -> bool:
    recorded = row.decision or {}
    given = (resume.decision, resume.edited, resume.value)
    return (recorded.get("decision"), recorded.get("edited"), recorded.get("value")) == given


class _ThreadBusyError(Exception):
    """The thread of an overdue consent is running; its expiry waits for the next sweep."""
