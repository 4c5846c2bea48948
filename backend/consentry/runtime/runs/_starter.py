"""Starting runs: validate the request, claim the thread, and hand the run to the executor.

Everything that can be refused is refused here, before the SSE response starts, as an HTTP error.
A decision reaches LangGraph only after the consent gate recorded it (a compare-and-set in the
same transaction that claims the thread): a double click or a second tab gets 409, never a second
resume. See ``consent_gate`` for the checks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any
from uuid import uuid4

from langchain_core.messages import HumanMessage
from langgraph.types import Command

from consentry.errors import ConflictError, GoneError, InvalidRequestError, NotFoundError
from consentry.observability.metrics import Metrics
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.consents import (
    DECIDED,
    already_decided,
    cancel_consent,
    check_decision,
    check_each_consent_once,
    expire_consent,
    record_decision,
    recorded_decisions,
    settle_pending,
)
from consentry.runtime.guards import KeyHold, refuse_if_tenant_at_cap
from consentry.runtime.notes import SampleNote
from consentry.runtime.replicas import EventNotifications, FollowedRun
from consentry.runtime.runs._claims import claim_run
from consentry.runtime.runs._continuation import continuation
from consentry.runtime.runs._dead_runs import Recovery, close_dead_run, dead_runs, read_recovery
from consentry.runtime.runs._executor import (
    NOWHERE,
    ActiveRun,
    GraphInput,
    GraphPosition,
    RunExecutor,
)
from consentry.runtime.runs._inputs import dump_inputs, load_inputs
from consentry.runtime.runs._targets import (
    RunTarget,
    RunTargets,
    refuse_if_running,
    run_in_progress,
)
from consentry.runtime.runs._transcripts import checkpoint_transcript
from consentry.schemas.approvals import DecisionRequest
from consentry.schemas.chat import ChatRequest, ResumeDecision
from consentry.schemas.events import Trigger
from consentry.schemas.threads import CancelAccepted
from consentry.storage import approvals as approvals_repo
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.database import Database, DbConnection
from consentry.storage.leases import Claim, LeaseLostError
from consentry.storage.transcript import add_to_transcript, mark_transcript_kept
from consentry_graphs.consent import ConsentDecision
from consentry_graphs.registry import GraphSpec

__all__ = ["RunStarter"]

_TITLE_CHARS = 80


class RunStarter:
    def __init__(
        self,
        *,
        db: Database,
        executor: RunExecutor,
        graphs: dict[str, GraphSpec],
        clock: Clock,
        max_message_chars: int,
        metrics: Metrics,
        queue_for: EventNotifications | None = None,
        max_active_runs_per_tenant: int = 0,
        sample_notes: Sequence[SampleNote] = (),
    ) -> None:
        """With ``queue_for`` (an API-only replica), runs are queued for the worker replicas and
        their events followed through the log, woken by those notifications.
        ``max_active_runs_per_tenant``: runs a client starts are refused with 429 while its tenant
        has that many active (0: no cap; see ``tenant_runs``). ``sample_notes``: what an owner's
        default project starts with, when a message creates it (``sample_notes``)."""
        self._db = db
        self._queue_for = queue_for
        self._executor = executor
        self._targets = RunTargets(db=db, graphs=graphs, clock=clock, sample_notes=sample_notes)
        self._clock = clock
        self._max_message_chars = max_message_chars
        self._max_active_runs_per_tenant = max_active_runs_per_tenant
        self._metrics = metrics
        self.on_overdue: Callable[[], None] = lambda: None
        """Called when a decision found its consent overdue (the expiry sweeper wakes)."""

    async def start(
        self, owner: Principal, request: ChatRequest, *, key: KeyHold | None = None
    ) -> ActiveRun:
        """Start the run a chat request asks for. ``key``: the request's ``Idempotency-Key``,
        completed in the transaction that claims the run."""
        target = await self._targets.resolve(owner, request)
        if request.decisions:
            return await self._start_decisions(owner, target, request.decisions, key)
        assert request.message is not None
        return await self._start_message(owner, target, request, key)

    async def decide(
        self,
        owner: Principal,
        approval_id: str,
        decision: DecisionRequest,
        *,
        key: KeyHold | None = None,
    ) -> ActiveRun:
        """A decision from the approvals inbox: same checks and records as a chat resume."""
        async with self._db.read() as conn:
            row = await approvals_repo.find_approval(conn, owner, approval_id)
            if row is None:
                raise NotFoundError.of("approval", approval_id)
            thread = await threads_repo.get_thread(conn, owner, row.thread_id)
        resume = ResumeDecision(approval_id=approval_id, **decision.model_dump())
        return await self._start_decisions(owner, self._targets.of(thread), [resume], key)

    async def take_over_dead_runs(self, *, lease_expired_by: datetime | None) -> int:
        """Take over every run whose process died (``dead_runs.dead_runs``); how many this
        process got (another one may win some)."""
        taken = 0
        for run in await dead_runs(self._db, lease_expired_by=lease_expired_by):
            try:
                await self.take_over(run)
            except LeaseLostError:
                continue  # another process took it first
            taken += 1
        return taken

    async def take_over(self, dead: Any) -> None:
        """Close a run a dead process left open as far as its graph got, and continue its work
        from the last checkpoint, in one transaction (so nobody sees the thread idle in
        between): see ``dead_runs``. Nothing is continued when nothing is left to run or the
        graph is no longer served. ``LeaseLostError`` when another process took it first."""
        owner = Principal(dead.tenant, dead.user_id)
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, owner, dead.thread_id)
        recovery = Recovery()
        target: RunTarget | None = None
        with contextlib.suppress(InvalidRequestError):  # a graph no longer served: just close
            # As the thread will be once the dead run is closed (its last run stopped).
            target = replace(self._targets.of(thread), last_reason="failed")
            recovery = await read_recovery(
                self._db,
                self._executor.graph(target.spec.name),
                target,
                dead,
                position=await self._executor.position(target.spec, target.thread_id),
                consent_ttl=self._executor.consent_ttl,
            )
        now, run_id = self._clock(), str(uuid4())
        async with self._db.write() as conn:
            closed = await close_dead_run(
                conn, dead, recovery, leases=self._executor.leases, clock=self._clock
            )
            claim = None
            if target is not None and recovery.continuation:
                claim = await self._try_claim(
                    conn,
                    owner,
                    target,
                    run_id,
                    "recovery",
                    now,
                    (closed.status,),
                    recovery.continuation,
                )
        self._metrics.run_closed_after_crash(dead.graph, closed.reason)
        for consent in closed.consents:
            self._metrics.consent_requested(dead.graph, consent.kind)
            self._executor.on_consent_requested(consent.expires_at)
        if target is not None and claim is not None:
            run = await self._launch(
                owner, target, run_id, claim, "recovery", recovery.continuation
            )
            run.events.detach()  # nobody listens yet; clients join with GET .../stream

    async def cancel(self, owner: Principal, thread_id: str) -> CancelAccepted:
        """Stop the thread's active run at its next step boundary (final reason ``cancelled``)."""
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, owner, thread_id)
        run_id = self._executor.cancel(thread_id)
        if run_id is None and self._db.is_postgres and thread.status == "running":
            # The run executes in another process: tell it (it stops at its next boundary).
            run_id = thread.active_run_id
            async with self._db.write() as conn:
                await runs_repo.request_cancel(conn, run_id)
        if run_id is None:
            raise ConflictError(
                "This thread has no active run to cancel.",
                code="no_active_run",
                details={"thread_id": thread_id},
            )
        return CancelAccepted(thread_id=thread_id, run_id=run_id)

    async def retry(
        self, owner: Principal, thread_id: str, *, key: KeyHold | None = None
    ) -> ActiveRun:
        """Run a failed run's remaining work again, from the thread's last checkpoint: the step
        that failed (a model provider that gave up, say) and whatever follows it, or the whole
        run when its graph never got its inputs (``runtime.continuation``)."""
        async with self._db.read() as conn:
            target = self._targets.of(await threads_repo.get_thread(conn, owner, thread_id))
        refuse_if_running(target)
        inputs: list[GraphInput] = []
        if target.last_reason == "failed":
            position = await self._executor.position(target.spec, thread_id)
            async with self._db.read() as conn:
                recorded = await recorded_decisions(conn, target, position.waiting)
                failed = await runs_repo.last_run(conn, thread_id)
            inputs = continuation(
                position,
                recorded,
                run_id=failed.id if failed is not None else None,
                inputs=load_inputs(failed.inputs)
                if failed is not None and failed.inputs is not None
                else None,
            )
        if not inputs:
            raise ConflictError(
                "This thread has no failed run to retry: its last run ended "
                f"{target.last_reason or 'never'!s}, and its graph has nothing left to run.",
                code="nothing_to_retry",
                details={"thread_id": thread_id, "last_reason": target.last_reason},
            )
        return await self._start_continuation(owner, target, self._clock(), inputs, "retry", key)

    async def expire(self, owner: Principal, row: Any) -> bool:
        """Expire one overdue consent and resume its graph down the expired path, in a run
        nobody listens to (its events are stored). False when a decision won the race, or the
        thread is busy (the sweeper tries again)."""
        now = self._clock()
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, owner, row.thread_id)
        target = self._targets.of(thread)
        position = await self._executor.position(target.spec, target.thread_id)
        run_id = str(uuid4())
        try:
            run = await self._expire_in(owner, target, row, run_id, position, now)
        except _ThreadBusyError:
            return False
        if run is None:
            return False
        run.events.detach()
        return True

    async def _expire_in(
        self,
        owner: Principal,
        target: RunTarget,
        row: Any,
        run_id: str,
        position: GraphPosition,
        now: datetime,
    ) -> ActiveRun | None:
        waiting = position.waiting
        async with self._db.write() as conn:
            if row.id not in waiting:
                await cancel_consent(conn, owner, row=row, now=now)
                return None
            if not await expire_consent(conn, owner, row=row, run_id=run_id, now=now):
                return None
            recorded = await recorded_decisions(conn, target, waiting - {row.id})
            decision = ConsentDecision(approval_id=row.id, decision="expire", decided_by="system")
            command: Command[Any] = Command(
                resume={**recorded, row.id: decision.model_dump(mode="json")}
            )
            claim = await self._try_claim(
                conn, owner, target, run_id, "expiry", now, ("awaiting_consent",), [command]
            )
            if claim is None:
                raise _ThreadBusyError  # roll the expiry back: it happens when the thread is free
        self._metrics.expired(row.kind)
        return await self._launch(
            owner, target, run_id, claim, "expiry", [command], resumed=position.asking
        )

    async def _start_message(
        self, owner: Principal, target: RunTarget, request: ChatRequest, key: KeyHold | None
    ) -> ActiveRun:
        message = request.message or ""
        if len(message) > self._max_message_chars:
            raise InvalidRequestError(
                f"The message is longer than {self._max_message_chars} characters "
                "(max_message_chars).",
                code="message_too_long",
                details={"limit": "max_message_chars", "max": self._max_message_chars},
            )
        run_id, now = str(uuid4()), self._clock()
        refuse_if_running(target)
        position = NOWHERE
        if target.status == "awaiting_consent" or target.stopped_half_way:
            position = await self._executor.position(target.spec, target.thread_id)
        waiting = position.waiting
        async with self._db.write() as conn:
            if target.is_new:
                await threads_repo.create_thread(
                    conn,
                    owner,
                    thread_id=target.thread_id,
                    graph=target.spec.name,
                    project_id=target.project_id,
                    note_id=target.note_id,
                    title=" ".join(message.split())[:_TITLE_CHARS],
                    consent_policy=target.consent_policy,
                    now=now,
                )
            elif target.note_id is not None and target.remembered_note_id is None:
                await threads_repo.remember_note(conn, target.thread_id, target.note_id)
            recorded = await recorded_decisions(conn, target, waiting)
            settled = await settle_pending(
                conn, owner, target, request, run_id, waiting - recorded.keys(), now
            )
            closed = settled.closed
            continue_decision = (
                target.stopped_half_way
                and await runs_repo.last_run_trigger(conn, target.thread_id) == "resume"
            )
            inputs: list[GraphInput] = []
            if recorded or settled.resumes:
                inputs.append(Command(resume={**recorded, **settled.resumes}))
            # A decided consent whose run stopped half-way is honoured before the new message.
            elif continue_decision and position.unfinished:
                inputs.append(None)
            inputs.append(
                {
                    "messages": [HumanMessage(message, id=f"msg-{uuid4().hex}")],
                    "project_id": target.project_id,
                    "note_id": target.note_id,
                }
            )
            # The claim expects the status this request was checked against: if another run
            # started or ended in between, this one gets `run_in_progress` instead of acting on
            # stale facts (e.g. cancelling a consent that was asked a moment ago).
            claim = await self._claim(conn, owner, target, run_id, "message", now, inputs, key)
        self._count_decisions(closed, now)
        return await self._launch(owner, target, run_id, claim, "message", inputs)

    async def _start_decisions(
        self,
        owner: Principal,
        target: RunTarget,
        resumes: list[ResumeDecision],
        key: KeyHold | None,
    ) -> ActiveRun:
        check_each_consent_once(resumes)
        now = self._clock()
        if target.status == "running":
            # A decision that lost a race to another one is told who won (the winner's run is
            # what is running), not merely that a run is going.
            async with self._db.read() as conn:
                for resume in resumes:
                    row = await approvals_repo.find_approval(conn, owner, resume.approval_id)
                    if row is not None and row.status in DECIDED:
                        raise already_decided(row)  # approved, edited or rejected
            refuse_if_running(target)
        # What the graph waits for is read first: a row read after it that is still pending was
        # pending in that checkpoint too, so a concurrent winner shows as `already_decided`.
        position = await self._executor.position(target.spec, target.thread_id)
        waiting = position.waiting
        async with self._db.read() as conn:
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
                return await self._start_continuation(owner, target, now, remaining, "resume", key)
        if not pending and all(row is None for row in rows):
            raise ConflictError(
                "This thread has no pending consent to decide.",
                code="no_pending_consent",
                details={"thread_id": target.thread_id},
            )
        try:
            for row, resume in zip(rows, resumes, strict=True):
                check_decision(
                    spec=target.spec,
                    thread_id=target.thread_id,
                    row=row,
                    resume=resume,
                    pending_ids=waiting,
                    now=now,
                )
        except GoneError:
            self.on_overdue()  # the sweeper expires it and resumes the graph's expired path
            raise
        decisions = [
            ConsentDecision(
                approval_id=resume.approval_id,
                decision=resume.decision,
                edited=resume.edited,
                comment=resume.comment,
                decided_by=owner.display,
            )
            for resume in resumes
        ]
        run_id = str(uuid4())
        values = {d.approval_id: d.model_dump(mode="json") for d in decisions}
        command: Command[Any] = Command(resume={**recorded, **values})
        async with self._db.write() as conn:
            for row, decision in zip(rows, decisions, strict=True):
                await record_decision(
                    conn, owner, row=row, decision=decision, run_id=run_id, now=now
                )
            claim = await self._claim(conn, owner, target, run_id, "resume", now, [command], key)
        self._count_decisions(list(zip(rows, decisions, strict=True)), now)
        return await self._launch(
            owner, target, run_id, claim, "resume", [command], resumed=position.asking
        )

    async def _start_continuation(
        self,
        owner: Principal,
        target: RunTarget,
        now: datetime,
        inputs: list[GraphInput],
        trigger: Trigger,
        key: KeyHold | None,
    ) -> ActiveRun:
        run_id = str(uuid4())
        async with self._db.write() as conn:
            claim = await self._claim(conn, owner, target, run_id, trigger, now, inputs, key)
        return await self._launch(owner, target, run_id, claim, trigger, inputs)

    def _count_decisions(self, decided: list[tuple[Any, ConsentDecision]], now: datetime) -> None:
        """Count decisions once their transaction committed (an expiry is not a decision)."""
        for row, decision in decided:
            if decision.decision == "expire":
                self._metrics.expired(row.kind)
            else:
                self._metrics.decided(
                    kind=row.kind,
                    decision=decision.decision,
                    decided_by=decision.decided_by,
                    asked_at=row.created_at,
                    now=now,
                )

    async def _launch(
        self,
        owner: Principal,
        target: RunTarget,
        run_id: str,
        claim: Claim,
        trigger: Trigger,
        inputs: list[GraphInput],
        *,
        resumed: frozenset[str] = frozenset(),
    ) -> ActiveRun:
        """Execute the claimed run here, or (an API-only replica) queue it for a worker.
        ``resumed``: the nodes that asked the consents its inputs answer."""
        if self._queue_for is not None:
            async with self._db.write() as conn:
                await runs_repo.queue_run(
                    conn, target.thread_id, run_id=run_id, fencing_token=claim.fencing_token
                )
            followed = FollowedRun(
                self._db,
                self._queue_for,
                thread_id=target.thread_id,
                run_id=run_id,
                after_seq=claim.last_seq,
            )
            return ActiveRun(thread_id=target.thread_id, run_id=run_id, events=followed)
        return self._executor.launch(
            owner,
            spec=target.spec,
            thread_id=target.thread_id,
            run_id=run_id,
            claim=claim,
            trigger=trigger,
            consent_policy=target.consent_policy,
            graph_inputs=inputs,
            resumed=resumed,
        )

    async def _try_claim(
        self,
        conn: DbConnection,
        owner: Principal,
        target: RunTarget,
        run_id: str,
        trigger: Trigger,
        now: datetime,
        expected: tuple[str, ...],
        inputs: list[GraphInput],
    ) -> Claim | None:
        claim = await claim_run(
            conn,
            owner,
            target,
            run_id=run_id,
            trigger=trigger,
            inputs=dump_inputs(inputs),
            leases=self._executor.leases,
            now=now,
            expected=expected,
        )
        if claim is not None and not target.transcript_kept:
            # A thread from before the transcript table: its messages so far are in its
            # checkpoint only. They go first, before anything this run says.
            graph = self._executor.graph(target.spec.name)
            earlier = await checkpoint_transcript(graph, target.thread_id)
            await add_to_transcript(conn, target.thread_id, earlier, now=now)
            await mark_transcript_kept(conn, target.thread_id)
        return claim

    async def _claim(
        self,
        conn: DbConnection,
        owner: Principal,
        target: RunTarget,
        run_id: str,
        trigger: Trigger,
        now: datetime,
        inputs: list[GraphInput],
        key: KeyHold | None,
    ) -> Claim:
        """Claim the thread as this request found it (``target.status``), or 409; 429 when the
        tenant has as many active runs as it may. The request's idempotency key, if any, names
        the run in the same transaction."""
        await refuse_if_tenant_at_cap(
            conn, owner, thread_id=target.thread_id, cap=self._max_active_runs_per_tenant
        )
        claim = await self._try_claim(
            conn, owner, target, run_id, trigger, now, (target.status,), inputs
        )
        if claim is None:
            raise run_in_progress(target.thread_id)
        if key is not None:
            await key.complete(conn, thread_id=target.thread_id, run_id=run_id)
        return claim


def _same_decision(row: Any, resume: ResumeDecision) -> bool:
    recorded = row.decision or {}
    return (recorded.get("decision"), recorded.get("edited")) == (resume.decision, resume.edited)


class _ThreadBusyError(Exception):
    """The thread of an overdue consent is running; its expiry waits for the next sweep."""
