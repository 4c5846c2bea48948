"""Starting runs: validate the request, claim the thread, and hand the run to the executor.

Everything that can be refused is refused here, before the SSE response starts, as an HTTP error.
A decision reaches LangGraph only after the consent gate recorded it (a compare-and-set in the
same transaction that claims the thread): a double click or a second tab gets 409, never a second
resume. See ``consent_gate`` for the checks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import uuid4

from langchain_core.messages import HumanMessage
from langgraph.types import Command
from sqlalchemy.ext.asyncio import AsyncConnection

from backend.errors import ConflictError, GoneError, InvalidRequestError, NotFoundError
from backend.principal import Principal
from backend.runtime.clock import Clock
from backend.runtime.consent_gate import (
    already_decided,
    cancel_consent,
    check_decision,
    expire_consent,
    record_decision,
)
from backend.runtime.dead_runs import close_dead_run, dead_runs
from backend.runtime.executor import (
    NOWHERE,
    SEQ_RESERVATION,
    ActiveRun,
    GraphInput,
    GraphPosition,
    RunExecutor,
)
from backend.runtime.log_follower import FollowedRun
from backend.runtime.notifications import EventNotifications
from backend.runtime.run_inputs import dump_inputs
from backend.schemas.approvals import DecisionRequest
from backend.schemas.chat import ChatRequest, ResumeDecision
from backend.schemas.events import Trigger
from backend.schemas.threads import CancelAccepted
from backend.storage import approvals as approvals_repo
from backend.storage import leases as leases_repo
from backend.storage import notes as notes_repo
from backend.storage import runs as runs_repo
from backend.storage import threads as threads_repo
from backend.storage.audit import record_audit
from backend.storage.database import Database
from backend.storage.leases import Claim, LeaseLostError
from graphs.consent import ConsentDecision
from graphs.registry import GraphSpec

__all__ = ["RunStarter"]

_TITLE_CHARS = 80


@dataclass(frozen=True)
class _Target:
    thread_id: str
    spec: GraphSpec
    project_id: str
    note_id: str | None
    is_new: bool
    status: str
    last_reason: str | None
    consent_policy: str

    @property
    def stopped_half_way(self) -> bool:
        """The last run failed or was cancelled: the graph may have work left to continue."""
        return self.last_reason in ("failed", "cancelled")


class RunStarter:
    def __init__(
        self,
        *,
        db: Database,
        executor: RunExecutor,
        graphs: dict[str, GraphSpec],
        clock: Clock,
        max_message_chars: int,
        queue_for: EventNotifications | None = None,
    ) -> None:
        """With ``queue_for`` (an API-only replica), runs are queued for the worker replicas and
        their events followed through the log, woken by those notifications."""
        self._db = db
        self._queue_for = queue_for
        self._executor = executor
        self._graphs = graphs
        self._clock = clock
        self._max_message_chars = max_message_chars
        self.on_overdue: Callable[[], None] = lambda: None
        """Called when a decision found its consent overdue (the expiry sweeper wakes)."""

    async def start(self, owner: Principal, request: ChatRequest) -> ActiveRun:
        target = await self._resolve(owner, request)
        if request.decisions:
            return await self._start_decisions(owner, target, request.decisions)
        assert request.message is not None
        return await self._start_message(owner, target, request)

    async def decide(
        self, owner: Principal, approval_id: str, decision: DecisionRequest
    ) -> ActiveRun:
        """A decision from the approvals inbox: same checks and records as a chat resume."""
        async with self._db.read() as conn:
            row = await approvals_repo.find_approval(conn, owner, approval_id)
            if row is None:
                raise NotFoundError.of("approval", approval_id)
            thread = await threads_repo.get_thread(conn, owner, row.thread_id)
        resume = ResumeDecision(approval_id=approval_id, **decision.model_dump())
        return await self._start_decisions(owner, self._target_of(thread), [resume])

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
        """Close a run a dead process left open and continue its thread from the last checkpoint,
        in one transaction (so nobody sees the thread idle in between): the consents it had
        decided are resumed with the recorded decisions, other unfinished nodes run again.
        Nothing is continued when nothing is left to run or the graph is no longer served (the
        run stays ``failed``). ``LeaseLostError`` when another process took it first."""
        owner = Principal(dead.tenant, dead.user_id)
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, owner, dead.thread_id)
        inputs: list[GraphInput] = []
        target: _Target | None = None
        with contextlib.suppress(InvalidRequestError):  # a graph no longer served: just close
            # As the thread will be once the dead run is closed (its last run failed).
            target = replace(self._target_of(thread), last_reason="failed")
            position = await self._executor.position(target.spec, target.thread_id)
            async with self._db.read() as conn:
                recorded = await self._recorded_decisions(conn, target, position.waiting)
            inputs = self._continuation(position, recorded)
        now, run_id = self._clock(), str(uuid4())
        async with self._db.write() as conn:
            status = await close_dead_run(
                conn, dead, leases=self._executor.leases, clock=self._clock
            )
            claim = None
            if target is not None and inputs:
                claim = await self._try_claim(conn, target.thread_id, run_id, now, (status,))
                if claim is not None:
                    await self._start_run(conn, owner, target, run_id, "recovery", now)
        if target is not None and claim is not None:
            run = await self._launch(owner, target, run_id, claim, "recovery", inputs)
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

    async def retry(self, owner: Principal, thread_id: str) -> ActiveRun:
        """Run a failed run's remaining work again, from the thread's last checkpoint: the step
        that failed (a model provider that gave up, say) and whatever follows it."""
        async with self._db.read() as conn:
            target = self._target_of(await threads_repo.get_thread(conn, owner, thread_id))
        self._refuse_if_running(target)
        inputs: list[GraphInput] = []
        if target.last_reason == "failed":
            position = await self._executor.position(target.spec, thread_id)
            async with self._db.read() as conn:
                recorded = await self._recorded_decisions(conn, target, position.waiting)
            inputs = self._continuation(position, recorded)
        if not inputs:
            raise ConflictError(
                "This thread has no failed run to retry: its last run ended "
                f"{target.last_reason or 'never'!s}, and its graph has nothing left to run.",
                code="nothing_to_retry",
                details={"thread_id": thread_id, "last_reason": target.last_reason},
            )
        return await self._start_continuation(owner, target, self._clock(), inputs, "retry")

    async def expire(self, owner: Principal, row: Any) -> ActiveRun | None:
        """Expire one overdue consent and resume its graph down the expired path. Returns None
        when a decision won the race, or the thread is busy (the sweeper tries again)."""
        now = self._clock()
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, owner, row.thread_id)
        target = self._target_of(thread)
        waiting = (await self._executor.position(target.spec, target.thread_id)).waiting
        run_id = str(uuid4())
        try:
            return await self._expire_in(owner, target, row, run_id, waiting, now)
        except _ThreadBusyError:
            return None

    async def _expire_in(
        self,
        owner: Principal,
        target: _Target,
        row: Any,
        run_id: str,
        waiting: frozenset[str],
        now: datetime,
    ) -> ActiveRun | None:
        async with self._db.write() as conn:
            if row.id not in waiting:
                await cancel_consent(conn, owner, row=row, now=now)
                return None
            if not await expire_consent(conn, owner, row=row, run_id=run_id, now=now):
                return None
            claim = await self._try_claim(
                conn, target.thread_id, run_id, now, ("awaiting_consent",)
            )
            if claim is None:
                raise _ThreadBusyError  # roll the expiry back: it happens when the thread is free
            await self._start_run(conn, owner, target, run_id, "expiry", now)
            recorded = await self._recorded_decisions(conn, target, waiting - {row.id})
        decision = ConsentDecision(approval_id=row.id, decision="expire", decided_by="system")
        command: Command[Any] = Command(
            resume={**recorded, row.id: decision.model_dump(mode="json")}
        )
        return await self._launch(owner, target, run_id, claim, "expiry", [command])

    async def _resolve(self, owner: Principal, request: ChatRequest) -> _Target:
        async with self._db.read() as conn:
            if request.thread_id is None:
                if request.decisions:
                    raise InvalidRequestError(
                        "A `resume` needs the `thread_id` of its consent.",
                        details={"field": "thread_id"},
                    )
                spec = self._spec(request.graph)
                project_id = request.project_id
                if project_id is not None:
                    await notes_repo.get_project(conn, owner, project_id)
                target = _Target(
                    thread_id=str(uuid4()),
                    spec=spec,
                    project_id=project_id or "",
                    note_id=request.note_id,
                    is_new=True,
                    status="idle",
                    last_reason=None,
                    consent_policy=request.consent_policy or "ask",
                )
            else:
                row = await threads_repo.get_thread(conn, owner, request.thread_id)
                if request.project_id not in (None, row.project_id):
                    await notes_repo.get_project(conn, owner, request.project_id)  # 404 first
                self._check_thread_matches(row, request)
                target = self._target_of(row, note_id=request.note_id)
            if (note_id := target.note_id) is not None:
                note = await notes_repo.get_note(conn, owner, note_id)
                if not target.project_id:
                    target = replace(target, project_id=note.project_id)
                elif note.project_id != target.project_id:
                    raise NotFoundError.of("note", note_id)
            default_project = None
            if not target.project_id:
                default_project = await notes_repo.find_default_project_id(conn, owner)
        if not target.project_id:
            if default_project is None:  # first use: create it
                async with self._db.write() as conn:
                    default_project = await notes_repo.default_project_id(
                        conn, owner, now=self._clock()
                    )
            target = replace(target, project_id=default_project)
        return target

    def _check_thread_matches(self, row: Any, request: ChatRequest) -> None:
        fields = request.model_fields_set
        mismatches = [
            ("graph", "graph_mismatch", request.graph, row.graph),
            ("project_id", "project_mismatch", request.project_id, row.project_id),
            ("consent_policy", "policy_mismatch", request.consent_policy, row.consent_policy),
        ]
        for field, code, asked, actual in mismatches:
            if field in fields and asked is not None and asked != actual:
                raise InvalidRequestError(
                    f"Thread {row.id!r} keeps its {field.replace('_', ' ')}: {actual!r}.",
                    code=code,
                    details={field: actual},
                )

    def _target_of(self, row: Any, *, note_id: str | None = None) -> _Target:
        return _Target(
            thread_id=row.id,
            spec=self._spec(row.graph),
            project_id=row.project_id,
            note_id=note_id,
            is_new=False,
            status=row.status,
            last_reason=row.last_reason,
            consent_policy=row.consent_policy,
        )

    def _spec(self, name: str) -> GraphSpec:
        spec = self._graphs.get(name)
        if spec is None:
            available = sorted(self._graphs)
            raise InvalidRequestError(
                f"No graph named {name!r}; available: {', '.join(available)}.",
                code="unknown_graph",
                details={"graph": name, "available": available},
            )
        return spec

    async def _start_message(
        self, owner: Principal, target: _Target, request: ChatRequest
    ) -> ActiveRun:
        message = request.message or ""
        if len(message) > self._max_message_chars:
            raise InvalidRequestError(
                f"The message is longer than {self._max_message_chars} characters.",
                code="message_too_long",
                details={"max_chars": self._max_message_chars},
            )
        run_id, now = str(uuid4()), self._clock()
        self._refuse_if_running(target)
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
                    title=" ".join(message.split())[:_TITLE_CHARS],
                    consent_policy=target.consent_policy,
                    now=now,
                )
            recorded = await self._recorded_decisions(conn, target, waiting)
            settled = await self._settle_pending(
                conn, owner, target, request, run_id, waiting - recorded.keys(), now
            )
            continue_decision = (
                target.stopped_half_way
                and await runs_repo.last_run_trigger(conn, target.thread_id) == "resume"
            )
            # The claim expects the status this request was checked against: if another run
            # started or ended in between, this one gets `run_in_progress` instead of acting on
            # stale facts (e.g. cancelling a consent that was asked a moment ago).
            claim = await self._claim(conn, target.thread_id, run_id, now, (target.status,))
            await self._start_run(conn, owner, target, run_id, "message", now)
        inputs: list[GraphInput] = []
        if recorded or settled:
            inputs.append(Command(resume={**recorded, **settled}))
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
        return await self._launch(owner, target, run_id, claim, "message", inputs)

    @staticmethod
    def _refuse_if_running(target: _Target) -> None:
        if target.status == "running":
            raise ConflictError(
                "Another run is active on this thread; wait for its final event.",
                code="run_in_progress",
                details={"thread_id": target.thread_id},
            )

    async def _recorded_decisions(
        self, conn: AsyncConnection, target: _Target, waiting: frozenset[str]
    ) -> dict[str, Any]:
        """Decisions (or expiries) already recorded for consents the graph still waits for: the
        run that carried them stopped half-way, so the next run resumes with them."""
        if not target.stopped_half_way or not waiting:
            return {}
        rows = await approvals_repo.closed_approvals(conn, target.thread_id, sorted(waiting))
        return {row.id: row.decision for row in rows if row.decision}

    async def _settle_pending(
        self,
        conn: AsyncConnection,
        owner: Principal,
        target: _Target,
        request: ChatRequest,
        run_id: str,
        waiting: frozenset[str],
        now: datetime,
    ) -> dict[str, Any]:
        """Before a message, every consent of the thread is closed: overdue ones expire, live ones
        are rejected when the request says so (else 409 ``consent_pending``), ones the graph no
        longer waits for are cancelled. Returns the resume values that take the graph down those
        paths."""
        if target.is_new:
            return {}
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
        resumes: dict[str, Any] = {}
        for row in pending:
            if row.id not in waiting:
                await cancel_consent(conn, owner, row=row, now=now)
            elif row.expires_at <= now:
                await expire_consent(conn, owner, row=row, run_id=run_id, now=now)
                expiry = ConsentDecision(approval_id=row.id, decision="expire", decided_by="system")
                resumes[row.id] = expiry.model_dump(mode="json")
            else:
                rejection = ConsentDecision(
                    approval_id=row.id,
                    decision="reject",
                    comment="Rejected by a new message.",
                    decided_by=owner.display,
                )
                await record_decision(
                    conn, owner, row=row, decision=rejection, run_id=run_id, now=now
                )
                resumes[row.id] = rejection.model_dump(mode="json")
        return resumes

    async def _start_decisions(
        self, owner: Principal, target: _Target, resumes: list[ResumeDecision]
    ) -> ActiveRun:
        now = self._clock()
        if target.status == "running":
            # A decision that lost a race to another one is told who won (the winner's run is
            # what is running), not merely that a run is going.
            async with self._db.read() as conn:
                for resume in resumes:
                    row = await approvals_repo.find_approval(conn, owner, resume.approval_id)
                    if row is not None and row.status in ("approved", "rejected"):
                        raise already_decided(row)
            self._refuse_if_running(target)
        # What the graph waits for is read first: a row read after it that is still pending was
        # pending in that checkpoint too, so a concurrent winner shows as `already_decided`.
        position = await self._executor.position(target.spec, target.thread_id)
        waiting = position.waiting
        async with self._db.read() as conn:
            rows = [await approvals_repo.find_approval(conn, owner, r.approval_id) for r in resumes]
            pending = await approvals_repo.pending_approvals(conn, target.thread_id)
            recorded = await self._recorded_decisions(conn, target, waiting)
        first = rows[0]
        if (
            len(resumes) == 1
            and first is not None
            and first.status != "pending"
            and _same_decision(first, resumes[0])
            and target.stopped_half_way
        ):
            continuation = self._continuation(position, recorded)
            if continuation:
                return await self._start_continuation(owner, target, now, continuation)
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
        async with self._db.write() as conn:
            for row, decision in zip(rows, decisions, strict=True):
                await record_decision(
                    conn, owner, row=row, decision=decision, run_id=run_id, now=now
                )
            claim = await self._claim(conn, target.thread_id, run_id, now, (target.status,))
            await self._start_run(conn, owner, target, run_id, "resume", now)
        values = {d.approval_id: d.model_dump(mode="json") for d in decisions}
        command: Command[Any] = Command(resume={**recorded, **values})
        return await self._launch(owner, target, run_id, claim, "resume", [command])

    @staticmethod
    def _continuation(position: GraphPosition, recorded: dict[str, Any]) -> list[GraphInput]:
        """How to continue a graph whose run stopped half-way: resume the consents it still waits
        for with their recorded decisions, or run its remaining nodes; [] if nothing is left."""
        if recorded:
            return [Command(resume=recorded)]
        return [None] if position.unfinished else []

    async def _start_continuation(
        self,
        owner: Principal,
        target: _Target,
        now: datetime,
        inputs: list[GraphInput],
        trigger: Trigger = "resume",
    ) -> ActiveRun:
        run_id = str(uuid4())
        async with self._db.write() as conn:
            claim = await self._claim(conn, target.thread_id, run_id, now, (target.status,))
            await self._start_run(conn, owner, target, run_id, trigger, now)
        return await self._launch(owner, target, run_id, claim, trigger, inputs)

    async def _start_run(
        self,
        conn: AsyncConnection,
        owner: Principal,
        target: _Target,
        run_id: str,
        trigger: Trigger,
        now: datetime,
    ) -> None:
        await runs_repo.start_run(
            conn, run_id=run_id, thread_id=target.thread_id, trigger=trigger, now=now
        )
        await record_audit(
            conn,
            owner,
            action="run_started",
            thread_id=target.thread_id,
            run_id=run_id,
            actor="system" if trigger in ("expiry", "recovery") else owner.display,
            now=now,
            data={"trigger": trigger, "graph": target.spec.name},
        )

    async def _launch(
        self,
        owner: Principal,
        target: _Target,
        run_id: str,
        claim: Claim,
        trigger: Trigger,
        inputs: list[GraphInput],
    ) -> ActiveRun:
        """Execute the claimed run here, or (an API-only replica) queue it for a worker."""
        if self._queue_for is not None:
            async with self._db.write() as conn:
                await runs_repo.queue_run(
                    conn,
                    target.thread_id,
                    run_id=run_id,
                    fencing_token=claim.fencing_token,
                    inputs=dump_inputs(inputs),
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
        )

    async def _try_claim(
        self,
        conn: AsyncConnection,
        thread_id: str,
        run_id: str,
        now: datetime,
        expected: tuple[str, ...],
    ) -> Claim | None:
        """Lease the thread to this process for a new run, if its status is ``expected``."""
        leases = self._executor.leases
        return await leases_repo.claim_thread(
            conn,
            thread_id,
            run_id=run_id,
            expected=expected,
            reserve=SEQ_RESERVATION,
            lease_owner=leases.owner,
            lease_expires_at=leases.expires_at(now),
            now=now,
        )

    async def _claim(
        self,
        conn: AsyncConnection,
        thread_id: str,
        run_id: str,
        now: datetime,
        expected: tuple[str, ...],
    ) -> Claim:
        claim = await self._try_claim(conn, thread_id, run_id, now, expected)
        if claim is None:
            raise ConflictError(
                "Another run is active on this thread; wait for its final event.",
                code="run_in_progress",
                details={"thread_id": thread_id},
            )
        return claim


def _same_decision(row: Any, resume: ResumeDecision) -> bool:
    recorded = row.decision or {}
    return (recorded.get("decision"), recorded.get("edited")) == (resume.decision, resume.edited)


class _ThreadBusyError(Exception):
    """The thread of an overdue consent is running; its expiry waits for the next sweep."""
