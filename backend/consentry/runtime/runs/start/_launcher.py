"""Claiming a thread for a run and launching it: the last stage of every way a run starts.

A claim is made in the caller's write transaction (with whatever else that transaction records:
a decision, an expiry, a dead run's end), so the thread is never seen free in between; the run
is then executed here, or (an API-only replica) queued for a worker and followed through the
log. The request's ``Idempotency-Key`` names its run in the claim's transaction.
"""

from __future__ import annotations

from datetime import datetime

from consentry.observability.metrics import Metrics
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.guards import refuse_if_tenant_at_cap
from consentry.runtime.replicas import EventNotifications, FollowedRun
from consentry.runtime.runs.execute import (
    NOWHERE,
    ActiveRun,
    ClaimHold,
    GraphInput,
    GraphPosition,
    RunExecutor,
    checkpoint_transcript,
    dump_inputs,
    run_id_for,
)
from consentry.runtime.runs.start._claims import claim_run
from consentry.runtime.runs.start._targets import RunTarget, run_in_progress
from consentry.schemas.events import Trigger
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.approvals import ApprovalRecord
from consentry.storage.db.database import Database, DbConnection
from consentry.storage.leases import Claim
from consentry.storage.transcript import add_to_transcript, mark_transcript_kept
from consentry_graphs.consent import ConsentDecision

__all__ = ["Launcher"]


class Launcher:
    def __init__(
        self,
        *,
        db: Database,
        executor: RunExecutor,
        clock: Clock,
        metrics: Metrics,
        queue_for: EventNotifications | None,
        max_active_runs_per_tenant: int,
    ) -> None:
        """With ``queue_for`` (an API-only replica), runs are queued for the worker replicas and
        their events followed through the log, woken by those notifications.
        ``max_active_runs_per_tenant``: runs a client starts are refused with 429 while its
        tenant has that many active (0: no cap; see ``guards``)."""
        self.db = db
        self.executor = executor
        self.clock = clock
        self.metrics = metrics
        self._queue_for = queue_for
        self._max_active_runs_per_tenant = max_active_runs_per_tenant

    async def claim(
        self,
        conn: DbConnection,
        owner: Principal,
        target: RunTarget,
        run_id: str,
        trigger: Trigger,
        now: datetime,
        inputs: list[GraphInput],
        key: ClaimHold | None,
    ) -> Claim:
        """Claim the thread as this request found it (``target.status``), or 409; 429 when the
        tenant has as many active runs as it may. The request's idempotency key, if any, names
        the run in the same transaction."""
        await refuse_if_tenant_at_cap(
            conn, owner, thread_id=target.thread_id, cap=self._max_active_runs_per_tenant
        )
        if key is not None:
            await key.complete(conn, thread_id=target.thread_id, run_id=run_id)
        # The claim is the transaction's last statement (on PostgreSQL sent with its commit);
        # refused, it fails the transaction, which then writes nothing.
        claim = await self.try_claim(
            conn, owner, target, run_id, trigger, now, (target.status,), inputs, last=True
        )
        if claim is None:
            raise run_in_progress(target.thread_id)
        return claim

    async def try_claim(
        self,
        conn: DbConnection,
        owner: Principal,
        target: RunTarget,
        run_id: str,
        trigger: Trigger,
        now: datetime,
        expected: tuple[str, ...],
        inputs: list[GraphInput],
        *,
        last: bool = False,
    ) -> Claim | None:
        """Claim the thread if its status is one of ``expected`` (else None, nothing written).
        ``last``: the claim is the transaction's last work (``claim_run``): what goes with it is
        written first, and a refused claim must end the transaction with an error."""
        if last:
            await self._with_the_claim(conn, target, now)
        claim = await claim_run(
            conn,
            owner,
            target,
            run_id=run_id,
            trigger=trigger,
            inputs=dump_inputs(inputs),
            leases=self.executor.leases,
            now=now,
            expected=expected,
            last=last,
        )
        if claim is not None and not last:
            await self._with_the_claim(conn, target, now)
        return claim

    async def _with_the_claim(self, conn: DbConnection, target: RunTarget, now: datetime) -> None:
        """What a run's claim writes beside the run's start."""
        if target.run_options.given:
            # The thread's runs given none (an inbox decision, an expiry) get these from now on.
            await threads_repo.keep_run_options(
                conn, target.thread_id, target.run_options.to_store()
            )
        if not target.transcript_kept:
            # A thread from before the transcript table: its messages so far are in its
            # checkpoint only. They go first, before anything this run says.
            graph = self.executor.graph(target.spec.name)
            earlier = await checkpoint_transcript(graph, target.thread_id)
            await add_to_transcript(conn, target.thread_id, earlier, now=now)
            await mark_transcript_kept(conn, target.thread_id)

    async def continue_with(
        self,
        owner: Principal,
        target: RunTarget,
        inputs: list[GraphInput],
        trigger: Trigger,
        key: ClaimHold | None,
        *,
        position: GraphPosition = NOWHERE,
    ) -> ActiveRun:
        """Claim the thread for a run that continues a stopped one with ``inputs``, and launch
        it (from ``position``, as :meth:`launch`)."""
        run_id = run_id_for(key)
        async with self.db.write() as conn:
            claim = await self.claim(
                conn, owner, target, run_id, trigger, self.clock(), inputs, key
            )
        return await self.launch(owner, target, run_id, claim, trigger, inputs, position=position)

    async def launch(
        self,
        owner: Principal,
        target: RunTarget,
        run_id: str,
        claim: Claim,
        trigger: Trigger,
        inputs: list[GraphInput],
        *,
        resumed: frozenset[str] = frozenset(),
        position: GraphPosition = NOWHERE,
    ) -> ActiveRun:
        """Execute the claimed run here, or (an API-only replica) queue it for a worker.
        ``resumed``: the nodes that asked the consents its inputs answer. ``position``: where
        the thread's graph stood when this request read it (after the thread's row,
        ``target.version``). When the claim is the first change of that row since
        (``Claim.follows``), nobody else can have written the thread's checkpoints in between
        (a run writes them under its lease, a state update moves the token on, a thread made
        again is another row) nor can after it: the run's graph starts from that read instead
        of reading the checkpoint again (``storage.checkpoints._head_read``)."""
        if self._queue_for is not None:
            async with self.db.write() as conn:
                await runs_repo.queue_run(
                    conn, target.thread_id, run_id=run_id, fencing_token=claim.fencing_token
                )
            followed = FollowedRun(
                self.db,
                self._queue_for,
                thread_id=target.thread_id,
                run_id=run_id,
                after_seq=claim.last_seq,
            )
            return ActiveRun(thread_id=target.thread_id, run_id=run_id, events=followed)
        return self.executor.launch(
            owner,
            spec=target.spec,
            thread_id=target.thread_id,
            run_id=run_id,
            claim=claim,
            trigger=trigger,
            consent_policy=target.consent_policy,
            graph_inputs=inputs,
            resumed=resumed,
            new_thread=target.is_new,
            head=position.checkpoint
            if target.version is not None and claim.follows(target.version)
            else None,
            options=target.run_options,
        )

    @property
    def queues_for_workers(self) -> bool:
        """Claimed runs are queued for worker processes (``CONSENTRY_ROLE=api``)."""
        return self._queue_for is not None

    def count_decisions(
        self, decided: list[tuple[ApprovalRecord, ConsentDecision]], now: datetime
    ) -> None:
        """Count decisions once their transaction committed (an expiry is not a decision)."""
        for row, decision in decided:
            if decision.decision == "expire":
                self.metrics.expired(row.kind)
            else:
                self.metrics.decided(
                    kind=row.kind,
                    decision=decision.decision,
                    decided_by=decision.decided_by,
                    asked_at=row.created_at,
                    now=now,
                )
