"""The run service: every way a client starts, steers or follows a run, as one object with
explicit operations. Each face (``POST /v1/chat`` and the rest of the ``/v1`` API; the next
protocols) translates its requests into these calls and their results into its own events: it
owns no run state and copies no logic.

    start(owner, chat request)         a message, or decisions sent as a chat ``resume``
    decide(owner, approval, decision)  a decision from the approvals inbox
    cancel(owner, thread)              stop the active run at its next step boundary
    retry(owner, thread)               run a failed run's remaining work again
    join(owner, thread, after)         what a client missed, then the active run live
    replay(owner, thread, run)         an idempotent retry's answer: that run, as it went on
    expire(owner, approval row)        (the expiry sweeper) take a consent's expired path
    take_over_dead_runs(...)           (start-up, takeover loop) continue what dead processes left

The stages are private modules: ``_targets`` (the thread a request is for), ``_messages``,
``_decisions``, ``_recovery``, ``_launcher`` (claiming and launching), ``_executor`` (the run as a
task), ``_joins``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import datetime

from consentry.errors import ConflictError, InvalidRequestError, NotFoundError
from consentry.observability.metrics import Metrics
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.consents import ExpiryAlarm
from consentry.runtime.notes import SampleNote
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.replicas import EventNotifications
from consentry.runtime.runs.execute import ActiveRun, ClaimHold, RunExecutor
from consentry.runtime.runs.read import StreamJoins
from consentry.runtime.runs.recover import retry_failed_run, take_over_dead_runs
from consentry.runtime.runs.start import (
    Launcher,
    RunTargets,
    expire_consent_run,
    expire_raw_interrupt,
    start_decisions,
    start_message,
)
from consentry.schemas.approvals import RAW_INTERRUPT, TOOL_CALL, DecisionRequest
from consentry.schemas.chat import ChatRequest, ResumeDecision
from consentry.schemas.threads import CancelAccepted
from consentry.storage import approvals as approvals_repo
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.approvals import ApprovalRecord
from consentry.storage.db.database import Database
from consentry_graphs.registry import GraphSpec

__all__ = ["RunService"]


class RunService:
    def __init__(
        self,
        *,
        db: Database,
        executor: RunExecutor,
        graphs: dict[str, GraphSpec],
        clock: Clock,
        metrics: Metrics,
        alarm: ExpiryAlarm,
        notifications: EventNotifications,
        max_message_chars: int,
        queue_for_workers: bool = False,
        max_active_runs_per_tenant: int = 0,
        sample_notes: Sequence[SampleNote] = (),
    ) -> None:
        """``alarm``: told when a decision finds its consent overdue and when a dead run's
        consents are recorded (the expiry sweeper listens). ``queue_for_workers`` (an API-only
        replica): runs are queued for the worker replicas and their events followed through
        the log, woken by ``notifications``. ``max_active_runs_per_tenant``: 0 for no cap.
        ``sample_notes``: what an owner's default project starts with, when a message creates
        it."""
        self._db = db
        self._executor = executor
        self._alarm = alarm
        self._max_message_chars = max_message_chars
        self._targets = RunTargets(db=db, graphs=graphs, clock=clock, sample_notes=sample_notes)
        self._launcher = Launcher(
            db=db,
            executor=executor,
            clock=clock,
            metrics=metrics,
            queue_for=notifications if queue_for_workers else None,
            max_active_runs_per_tenant=max_active_runs_per_tenant,
        )
        self._joins = StreamJoins(
            db=db, executor=executor, clock=clock, notifications=notifications, metrics=metrics
        )

    async def start(
        self,
        owner: Principal,
        request: ChatRequest,
        *,
        key: ClaimHold | None = None,
        creates_thread: bool = False,
    ) -> ActiveRun:
        """Start the run a chat request asks for: a message, or decisions (a ``resume``).
        ``key``: the request's ``Idempotency-Key``, completed in the transaction that claims the
        run. ``creates_thread``: a message whose ``thread_id`` no thread has creates it under
        that id (AG-UI's ``threadId``), in the transaction that claims it."""
        target = await self._targets.resolve(owner, request, creates=creates_thread)
        if any(request.breakpoints) and self._launcher.queues_for_workers:
            # A worker starts a run from what is stored: a run's own breakpoints are not.
            raise InvalidRequestError(
                "Breakpoints (`interrupt_before`, `interrupt_after`) are not served where runs "
                "go to worker processes (CONSENTRY_ROLE=api).",
                code="unsupported_field",
                details={"fields": ["interrupt_before", "interrupt_after"]},
            )
        if request.decisions:
            return await start_decisions(
                self._launcher, self._alarm, owner, target, request.decisions, key
            )
        return await start_message(
            self._launcher, owner, target, request, key, max_message_chars=self._max_message_chars
        )

    async def decide(
        self,
        owner: Principal,
        approval_id: str,
        decision: DecisionRequest,
        *,
        key: ClaimHold | None = None,
    ) -> ActiveRun:
        """A decision from the approvals inbox: same checks and records as a chat ``resume``."""
        async with self._db.read() as conn:
            row = await approvals_repo.find_approval(conn, owner, approval_id)
            if row is None:
                raise NotFoundError.of("approval", approval_id)
            thread = await threads_repo.get_thread(conn, owner, row.thread_id)
        resume = ResumeDecision(approval_id=approval_id, **decision.model_dump(exclude_unset=True))
        target = self._targets.of(thread)
        return await start_decisions(self._launcher, self._alarm, owner, target, [resume], key)

    async def cancel(
        self,
        owner: Principal,
        thread_id: str,
        *,
        run_id: str | None = None,
        roll_back: bool = False,
    ) -> CancelAccepted:
        """Stop the thread's active run (only if it is ``run_id``, when given) at its next step
        boundary (final reason ``cancelled``); ``roll_back``: its end also undoes what it wrote
        (``execute._run_rollback``)."""
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, owner, thread_id)
        active = thread.active_run_id if thread.status == "running" else None
        if run_id is not None and run_id != active:
            raise _no_active_run(thread_id, run_id)
        run_id = self._executor.cancel(thread_id, run_id=run_id, roll_back=roll_back)
        if run_id is None and self._db.is_postgres and active is not None:
            # The run executes in another process: tell it (it stops at its next boundary).
            run_id = active
            async with self._db.write() as conn:
                await runs_repo.request_cancel(conn, run_id, roll_back=roll_back)
        if run_id is None:
            raise _no_active_run(thread_id)
        return CancelAccepted(thread_id=thread_id, run_id=run_id)

    async def retry(
        self, owner: Principal, thread_id: str, *, key: ClaimHold | None = None
    ) -> ActiveRun:
        """Run the thread's failed run's remaining work again (409 ``nothing_to_retry``)."""
        async with self._db.read() as conn:
            target = self._targets.of(await threads_repo.get_thread(conn, owner, thread_id))
        return await retry_failed_run(self._launcher, target, owner, key)

    async def join(
        self,
        owner: Principal,
        thread_id: str,
        *,
        after_seq: int,
        graph_modes: frozenset[str] = frozenset(),
    ) -> AsyncIterator[OutgoingEvent]:
        """What a client that has seen up to ``after_seq`` missed, then the active run live
        (with LangGraph's outputs of ``graph_modes`` after each step, while it follows a run of
        this process: ``_joins``)."""
        return await self._joins.join(
            owner, thread_id, after_seq=after_seq, graph_modes=graph_modes
        )

    async def replay(
        self,
        owner: Principal,
        thread_id: str,
        run_id: str,
        *,
        graph_modes: frozenset[str] = frozenset(),
    ) -> AsyncIterator[OutgoingEvent]:
        """Run ``run_id`` again for the client that started it (an idempotent retry), or for a
        join from its start (``graph_modes`` as for :meth:`join`)."""
        return await self._joins.replay_run(owner, thread_id, run_id, graph_modes=graph_modes)

    async def wait_for_end(self, owner: Principal, thread_id: str, run_id: str) -> None:
        """Return once run ``run_id`` has ended (its ``final`` stored), following it live or
        through the log (``runs.cancel(wait=True)``, a rollback)."""
        async for _ in await self.replay(owner, thread_id, run_id):
            pass

    async def expire(self, owner: Principal, row: ApprovalRecord) -> bool:
        """Expire one overdue consent and resume its graph down the expired path, in a run
        nobody listens to (its events are stored). False when a decision won the race, or the
        thread is busy (the sweeper tries again)."""
        async with self._db.read() as conn:
            thread = await threads_repo.get_thread(conn, owner, row.thread_id)
        if row.kind == RAW_INTERRUPT or (
            row.kind == TOOL_CALL and "reject" not in row.event.get("allowed_decisions", [])
        ):  # nothing to resume the graph with that it asked for
            return await expire_raw_interrupt(self._launcher, owner, self._targets.of(thread), row)
        run = await expire_consent_run(self._launcher, owner, self._targets.of(thread), row)
        if run is None:
            return False
        run.events.detach()
        return True

    async def take_over_dead_runs(self, *, lease_expired_by: datetime | None) -> int:
        """Close and continue the runs of dead processes whose lease expired by then (None:
        every run left open, when this process is the only one); how many this process got."""
        return await take_over_dead_runs(
            self._launcher, self._targets, self._alarm, lease_expired_by=lease_expired_by
        )

    async def close_left_open(self, runs: Mapping[str, bool]) -> int:
        """Close these runs this process left open (SQLite: ``LeftOpenRuns``; run id → whether
        to continue its work), as its start-up would: how many were still open."""
        return await take_over_dead_runs(
            self._launcher, self._targets, self._alarm, lease_expired_by=None, only=runs
        )


def _no_active_run(thread_id: str, run_id: str | None = None) -> ConflictError:
    details = {"thread_id": thread_id} | ({"run_id": run_id} if run_id else {})
    message = "This thread has no active run to cancel."
    if run_id:
        message = f"Run {run_id!r} is not this thread's active run: it has ended, or never ran."
    return ConflictError(message, code="no_active_run", details=details)
