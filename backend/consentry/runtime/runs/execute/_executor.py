"""Executing runs: a run is an asyncio task that outlives the HTTP response that started it.

A run streams its graph with ``durability="sync"`` and maps every chunk to an event. When the graph
stops, one write transaction stores the run's durable events, the approvals for any consent it
asks for, the run's terminal reason and the thread's new status; only then are the ``consent`` and
``final`` events sent, so a client that resumes at once always finds its approval stored.

If the client goes away the run still finishes and is stored.

Each run holds a lease on its thread (``runtime.leases``); its event writes and its end are
checked against the lease's fencing token, so a run that lost its lease stores nothing more and
just stops. On shutdown (SIGTERM), every run stops at its next step boundary (its checkpoint is
saved), stores its events and gives up its lease without ending: the next process takes it over
and continues it from that checkpoint (``RunService.take_over_dead_runs``). A run that does not
reach a step boundary within the grace period is cancelled mid-step and taken over the same way;
its unfinished step runs again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import timedelta
from functools import partial
from typing import Literal

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import GraphRecursionError

from consentry.observability.logs import bind_run
from consentry.observability.metrics import Metrics, ModelCallMetrics
from consentry.observability.run_observer import RunObserver
from consentry.observability.tracing import Tracing
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.consents import ConsentDeadlines, ExpiryAlarm, OwnerEffectLedger
from consentry.runtime.guards import BudgetExhaustedError, TokenMeter
from consentry.runtime.notes import OwnerNotesStore
from consentry.runtime.replicas import LeaseKeeper
from consentry.runtime.runs.execute._active_runs import ActiveRuns
from consentry.runtime.runs.execute._event_stream import RunEventStream
from consentry.runtime.runs.execute._failures import database_lost, describe_failure
from consentry.runtime.runs.execute._graph_stream import GraphStreamer
from consentry.runtime.runs.execute._left_open import LeftOpenRuns
from consentry.runtime.runs.execute._run_consents import RunConsents
from consentry.runtime.runs.execute._run_options import RunOptions
from consentry.runtime.runs.execute._run_store import RunStore
from consentry.runtime.runs.execute._run_types import (
    SEQ_RESERVATION,
    SHUTDOWN_GRACE_SECONDS,
    ActiveRun,
    GraphInput,
    GraphPosition,
    Outcome,
    RunContext,
    RunLimits,
    StopRequestedError,
)
from consentry.runtime.runs.execute._step_batching import ProgressBatcher
from consentry.runtime.runs.execute._stream_mapping import (
    RESUMED_LABELS,
    ChunkMapper,
)
from consentry.runtime.runs.execute._takeover_stops import stop_for_takeover
from consentry.runtime.store import scoped_to
from consentry.schemas.chat import ConsentPolicy
from consentry.schemas.events import (
    ErrorEvent,
    RunStartedEvent,
    Trigger,
)
from consentry.storage.checkpoints import CheckpointFence, ConsentrySaver, HeadRead
from consentry.storage.db.database import Database, DbConnection
from consentry.storage.leases import Claim, LeaseLostError
from consentry.storage.runs import ROLL_BACK
from consentry_graphs.registry import CompiledGraph, GraphSpec
from consentry_graphs.services import GraphServices, serving

__all__ = [
    "SHUTDOWN_GRACE_SECONDS",
    "ActiveRun",
    "GraphInput",
    "GraphPosition",
    "RunExecutor",
    "RunLimits",
]

log = logging.getLogger(__name__)


class RunExecutor:
    def __init__(
        self,
        *,
        db: Database,
        graphs: Mapping[str, CompiledGraph],
        clock: Clock,
        consent_ttl_seconds: int,
        interrupt_ttl_seconds: int | None = None,
        limits: RunLimits | None = None,
        lease_seconds: float = 30.0,
        alarm: ExpiryAlarm,
        checkpoint_retention: Literal["latest", "turns", "all"] = "turns",
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        """``alarm``: told the deadline of each consent a run stores (the expiry sweeper)."""
        self._db = db
        self._tracing = tracing
        self._metrics = metrics or Metrics()
        # Decided once, not per run: which graphs keep only their newest checkpoint (each write
        # drops the older ones, in its transaction), or (`turns`) that and the one each run
        # started from. Not a graph with a DeltaChannel, whose checkpoints hold only changes
        # (the older are needed).
        self._latest_only = frozenset(
            name
            for name, graph in graphs.items()
            if checkpoint_retention != "all"
            and not any(isinstance(c, DeltaChannel) for c in graph.channels.values())
        )
        self._keep_turns = checkpoint_retention == "turns"
        self._active = ActiveRuns()
        self.leases = LeaseKeeper(
            db=db, clock=clock, lease_seconds=lease_seconds, on_lost=self._active.leases_lost
        )
        self._limits = limits or RunLimits()
        self._graphs = graphs
        self._clock = clock
        # How long a consent waits for a decision when its request names no deadline.
        self.deadlines = ConsentDeadlines(
            kit=timedelta(seconds=consent_ttl_seconds),
            raw=timedelta(seconds=interrupt_ttl_seconds) if interrupt_ttl_seconds else None,
        )
        self._running: set[asyncio.Task[None]] = set()
        self.left_open = LeftOpenRuns()  # (SQLite: closed by recover.LeftRunCloser)
        self._store = RunStore(
            left_open=self.left_open,
            db=db,
            clock=clock,
            metrics=self._metrics,
            alarm=alarm,
            ended=self._ended,
            compiled=self.graph,
        )
        self._streamer = GraphStreamer(
            db=db, graphs=graphs, limits=self._limits, model_metrics=ModelCallMetrics(self._metrics)
        )
        self._consents = RunConsents(
            db=db,
            clock=clock,
            metrics=self._metrics,
            deadlines=self.deadlines,
            store=self._store,
            streamer=self._streamer,
        )

    def graph(self, name: str) -> CompiledGraph:
        """The compiled graph ``name`` (``unknown_graph`` when it is not served here)."""
        return self._streamer.graph(name)

    async def forget_checkpoints(self, conn: DbConnection, graph: str, thread_id: str) -> None:
        """Delete the checkpoints kept under ``thread_id``, in ``conn``'s transaction: a thread
        created there under an id a client chose (a deletion that stopped half-way may have
        left some). After the thread's insert, so that a request that lost the race to create
        it fails on that insert before it deletes anything of the winner's."""
        checkpointer = self.graph(graph).checkpointer
        if isinstance(checkpointer, ConsentrySaver):
            await checkpointer.adelete_thread_in(conn, thread_id)
        elif isinstance(checkpointer, BaseCheckpointSaver):  # a saver of another kind
            await checkpointer.adelete_thread(thread_id)

    @property
    def running(self) -> int:
        """How many runs this process is executing."""
        return len(self._running)

    @property
    def graph_names(self) -> list[str]:
        return sorted(self._graphs)

    async def position(self, spec: GraphSpec, thread_id: str) -> GraphPosition:
        """Where the thread's graph stands, from one checkpoint read."""
        return await self._streamer.position(spec, thread_id)

    def launch(
        self,
        owner: Principal,
        *,
        spec: GraphSpec,
        thread_id: str,
        run_id: str,
        claim: Claim,
        trigger: Trigger,
        consent_policy: ConsentPolicy,
        graph_inputs: list[GraphInput],
        resumed: frozenset[str] = frozenset(),
        new_thread: bool = False,
        head: HeadRead | None = None,
        options: RunOptions | None = None,
    ) -> ActiveRun:
        """Start the run as a task. ``resumed``: the nodes that asked the consents its input
        answers (their first step gets the trigger's ``RESUMED_LABELS`` label). ``new_thread``:
        the thread was created with the run (its graph has no checkpoint to read). ``head``:
        the thread's newest checkpoint as read before the run's claim, when nothing can have
        written the thread since (its graph's first read is answered with it)."""
        events = RunEventStream(
            thread_id=thread_id,
            run_id=run_id,
            last_seq=claim.last_seq,
            reserved_until=claim.last_seq + SEQ_RESERVATION,
            clock=self._clock,
        )
        # Sent with the run's first stored chunk (store before send, like every durable event).
        events.record(events.make(RunStartedEvent, graph=spec.name, trigger=trigger))
        fence = CheckpointFence(thread_id, run_id, claim.fencing_token)
        services = GraphServices(
            notes=OwnerNotesStore(self._db, owner, self._clock, thread_id=thread_id, fence=fence),
            effects=OwnerEffectLedger(self._db, owner, self._clock, thread_id=thread_id),
            user=owner.display,
            conversation_window=self._limits.conversation_window,
            clock=self._clock,
        )
        meter = TokenMeter(
            thread_used=0,
            tenant_used=0,
            thread_budget=self._limits.thread_token_budget,
            tenant_budget=self._limits.tenant_token_budget,
        )
        spans = None
        if self._tracing is not None:
            spans = self._tracing.run(
                graph=spec.name, trigger=trigger, thread_id=thread_id, run_id=run_id
            )
        observer = RunObserver(self._metrics, graph=spec.name, trigger=trigger, spans=spans)
        run = RunContext(
            owner,
            spec,
            events,
            services,
            options or RunOptions(),
            trigger,
            consent_policy,
            meter,
            claim.fencing_token,
            observer,
            resumed,
        )
        run.progress = ProgressBatcher(
            events,
            partial(self._store.insert_events, run=run),
            db=self._db,
            fence=fence,
            latest_only=spec.name in self._latest_only,
            keep_turns=self._keep_turns,
            new_thread=new_thread,
            head=head,
        )
        self._active[thread_id] = run
        self.leases.track(run_id)
        task = asyncio.create_task(
            self._execute(run, graph_inputs),
            name=f"run:{run_id}",
        )
        run.task = task
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        task.add_done_callback(lambda _: self._ended(thread_id, run_id))
        return ActiveRun(thread_id=thread_id, run_id=run_id, events=events)

    async def _execute(self, run: RunContext, graph_inputs: list[GraphInput]) -> None:
        # The graph's nodes (tasks LangGraph starts from this one) read them: graph_services(),
        # and the Store they are compiled with acts for the run owner's tenant.
        with serving(run.services), scoped_to(run.owner.tenant):
            await self._execute_served(run, graph_inputs)

    async def _execute_served(self, run: RunContext, graph_inputs: list[GraphInput]) -> None:
        events = run.events
        bind_run(thread=events.thread_id, run=events.run_id)  # this task's log lines name it
        outcome = Outcome()
        mapper = ChunkMapper(
            run.spec,
            resumed=run.resumed,
            resumed_label=RESUMED_LABELS.get(run.trigger),
            told_unread=run.trigger in ("resume", "expiry"),
        )
        inputs = list(graph_inputs)
        try:
            async with asyncio.timeout(self._limits.timeout_seconds):
                await self._streamer.load_usage(run)
                if run.trigger in ("recovery", "retry"):
                    mapper = ChunkMapper(run.spec, said=await self._streamer.told_before(run))
                index = 0
                while inputs:
                    mapper.interrupts.clear()
                    await self._streamer.stream(run, mapper, inputs.pop(0), index)
                    index += 1
                    if mapper.interrupts and (
                        command := await self._consents.decide_by_policy(run, mapper)
                    ):
                        inputs.append(command)
            # Only a resume can meet a consent asked before (a parallel branch re-raising it).
            resumed = run.trigger != "message" or len(graph_inputs) > 1
            outcome.consents = await self._consents.consents(
                run, mapper.interrupts, resumed=resumed
            )
            if mapper.interrupts:
                outcome.reason = "interrupted"
            elif run.trigger == "expiry":
                outcome.reason = "expired"
        except asyncio.CancelledError:
            if not run.cut:
                # Shutdown (past its grace) and a lost lease: the next process continues it.
                await asyncio.shield(self._store.suspend(run))
                raise
            # A cancel that cut the step: the run ends `cancelled` as at a step boundary.
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            outcome = Outcome(reason="cancelled")
        except LeaseLostError:
            await stop_for_takeover(self._store, run, "lease_lost")
            return
        except StopRequestedError:
            if run.stop != "cancel":
                await self._store.suspend(run)
                return
            outcome = Outcome(reason="cancelled")
        except GraphRecursionError:
            outcome = Outcome(reason="step_limit")
        except BudgetExhaustedError:
            outcome = Outcome(reason="budget_exhausted")
        except TimeoutError:
            outcome = Outcome(reason="timeout")
        except Exception as exc:
            if database_lost(self._db, exc):
                await stop_for_takeover(self._store, run, "database_lost")
                return
            failure = describe_failure(exc)
            log.exception(
                "run failed",
                extra={
                    "thread_id": events.thread_id,
                    "run_id": events.run_id,
                    "code": failure.code,
                },
            )
            outcome = Outcome(reason="failed", error_code=failure.code)
            outcome.refused = await self._consents.refused_answers(run, graph_inputs)
            events.record(
                events.make(
                    ErrorEvent,
                    code=failure.code,
                    message=failure.message,
                    retryable=failure.retryable,
                )
            )
        await asyncio.shield(self._store.finish(run, outcome))

    def _ended(self, thread_id: str, run_id: str) -> None:
        self.leases.forget(run_id)
        self._active.ended(thread_id, run_id)

    def active_stream(self, thread_id: str) -> RunEventStream | None:
        """The events of the thread's run active in this process, if any."""
        return self._active.stream(thread_id)

    def cancel(
        self, thread_id: str, *, run_id: str | None = None, roll_back: bool = False
    ) -> str | None:
        """Stop the thread's run (``ActiveRuns.cancel``); its run id, or None."""
        return self._active.cancel(thread_id, run_id=run_id, roll_back=roll_back)

    def cancel_run(self, notified: str) -> None:
        """``cancel`` by run id, for a cancel another process received (a notification:
        ``storage.runs.request_cancel``'s payload)."""
        run_id, _, roll_back = notified.partition(" ")
        self._active.cancel_run(run_id, roll_back=roll_back == ROLL_BACK)

    def suspend_all(self) -> None:
        """The server is shutting down: every run stops at its next step boundary."""
        self._active.suspend_all()

    async def wait_for_runs(self) -> None:
        """Wait until every run this process started has ended (and been stored)."""
        while self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    async def shutdown(self) -> None:
        """Stop every run at its next step boundary (within a grace period, then mid-step),
        leaving each for the next process to continue."""
        self.suspend_all()
        if self._running:
            _, pending = await asyncio.wait(set(self._running), timeout=SHUTDOWN_GRACE_SECONDS)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        await self.leases.stop()
