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
and continues it from that checkpoint (``RunStarter.take_over``). A run that does not reach a step
boundary within the grace period is cancelled mid-step and taken over the same way; its
unfinished step runs again.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Literal, Protocol

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.errors import GraphRecursionError
from langgraph.types import Command, Interrupt

from consentry.errors import InvalidRequestError
from consentry.observability.logs import bind_run
from consentry.observability.metrics import Metrics, ModelCallMetrics
from consentry.observability.run_observer import RunObserver
from consentry.observability.tracing import ModelCallSpans, Tracing
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.consents import (
    OwnerEffectLedger,
    consent_event,
    record_decision,
    store_consent,
)
from consentry.runtime.guards import BudgetExhaustedError, TokenMeter
from consentry.runtime.notes import OwnerNotesStore
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.replicas import LeaseKeeper
from consentry.runtime.runs._event_stream import RunEventStream
from consentry.runtime.runs._failures import describe_failure
from consentry.runtime.runs._step_batching import ProgressBatcher
from consentry.runtime.runs._stream_mapping import (
    RESUMED_LABELS,
    STREAM_MODES,
    ChunkMapper,
    Said,
    said_by,
)
from consentry.schemas.events import (
    ConsentEvent,
    ErrorEvent,
    FinalEvent,
    RunStartedEvent,
    TerminalReason,
    Trigger,
)
from consentry.storage import approvals as approvals_repo
from consentry.storage import events as events_repo
from consentry.storage import leases as leases_repo
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.database import Database, DbConnection
from consentry.storage.leases import Claim, LeaseLostError
from consentry.storage.transcript import TranscriptEntry, add_to_transcript
from consentry_graphs.consent import ConsentDecision, ConsentRequest, Decision
from consentry_graphs.registry import CompiledGraph, GraphSpec
from consentry_graphs.services import GraphContext
from consentry_graphs.window import DEFAULT_CONVERSATION_WINDOW

__all__ = [
    "SHUTDOWN_GRACE_SECONDS",
    "ActiveRun",
    "GraphInput",
    "GraphPosition",
    "RunExecutor",
    "RunLimits",
]

log = logging.getLogger(__name__)
SHUTDOWN_GRACE_SECONDS = 10.0


class RunEvents(Protocol):
    """How the request that started a run reads its events: a local run's ``RunEventStream``, or
    a ``FollowedRun`` reading the log of a run queued for a worker."""

    def listen(self) -> AsyncIterator[OutgoingEvent]: ...

    def detach(self) -> None: ...


@dataclass
class ActiveRun:
    thread_id: str
    run_id: str
    events: RunEvents


@dataclass(frozen=True)
class RunLimits:
    """Bounds every run gets, each ending it with its own terminal reason."""

    max_steps: int = 50
    timeout_seconds: float = 300.0
    thread_token_budget: int | None = None
    tenant_token_budget: int | None = None
    conversation_window: int = DEFAULT_CONVERSATION_WINDOW
    """Messages a graph keeps in its state (``consentry_graphs.window``)."""


class _StopRequestedError(Exception):
    """The run was asked to stop (``_RunContext.stop``); it stops at the next step boundary."""


StopReason = Literal["cancel", "suspend", "lease_lost"]
"""Why a run stops early: a client cancelled it (it ends ``cancelled``), the server shuts down
(it is suspended, for the next process to continue), or another process took it over."""


@dataclass
class _RunContext:
    owner: Principal
    spec: GraphSpec
    events: RunEventStream
    context: GraphContext
    trigger: Trigger
    consent_policy: str
    meter: TokenMeter
    fencing_token: int
    observer: RunObserver
    resumed: frozenset[str] = frozenset()
    stop: StopReason | None = None
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    progress: ProgressBatcher = field(init=False, repr=False)


@dataclass
class _Outcome:
    reason: TerminalReason = "completed"
    error_code: str | None = None
    consents: list[ConsentEvent] = field(default_factory=list)


@dataclass(frozen=True)
class GraphPosition:
    waiting: frozenset[str]
    """The interrupt (approval) ids the graph waits for."""
    unfinished: bool
    """Nodes are left to run and no consent is awaited: a run stopped half-way (a failure, a
    crash) and ``astream(None)`` would continue it."""
    interrupts: tuple[Interrupt, ...] = ()
    """The interrupts the graph waits for, with their values."""
    asking: frozenset[str] = frozenset()
    """The nodes that asked them."""
    written_by: str | None = None
    """The run whose graph input wrote the newest checkpoint (``RUN_MARK``), if any."""
    input_index: int | None = None
    """Which of that run's graph inputs (0, 1, ...) it was."""


NOWHERE = GraphPosition(waiting=frozenset(), unfinished=False)

RUN_MARK = "consentry_run_id"
INPUT_MARK = "consentry_input"
"""Keys of the checkpoint metadata naming the run and the graph input that wrote it: after a
crash they tell how far a run's inputs got (``runtime.recovery``)."""

GraphInput = dict[str, Any] | Command[Any] | None
"""What one ``astream`` call starts with; ``None`` continues a run that stopped half-way."""

SEQ_RESERVATION = 4096
"""Sequence numbers a run reserves at a time; a run that dies leaves a gap, never a reuse."""


class RunExecutor:
    def __init__(
        self,
        *,
        db: Database,
        graphs: Mapping[str, CompiledGraph],
        clock: Clock,
        consent_ttl_seconds: int,
        limits: RunLimits | None = None,
        lease_seconds: float = 30.0,
        checkpoint_retention: Literal["latest", "all"] = "latest",
        metrics: Metrics | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self._db = db
        self._tracing = tracing
        self._metrics = metrics or Metrics()
        self._model_metrics = ModelCallMetrics(self._metrics)
        # Decided once, not per run: which graphs' checkpoints are pruned after each run. Not a
        # graph with a DeltaChannel, whose checkpoints hold only changes (the older are needed).
        self._prunable: dict[str, BaseCheckpointSaver[Any]] = {
            name: graph.checkpointer
            for name, graph in graphs.items()
            if checkpoint_retention == "latest"
            and isinstance(graph.checkpointer, BaseCheckpointSaver)
            and not any(isinstance(c, DeltaChannel) for c in graph.channels.values())
        }
        self.leases = LeaseKeeper(
            db=db, clock=clock, lease_seconds=lease_seconds, on_lost=self._leases_lost
        )
        self._limits = limits or RunLimits()
        self._active: dict[str, _RunContext] = {}
        self._graphs = graphs
        self._clock = clock
        self._consent_ttl = timedelta(seconds=consent_ttl_seconds)
        self._running: set[asyncio.Task[None]] = set()
        self.on_consent_requested: Callable[[datetime], None] = lambda expires_at: None
        """Called with the deadline of each consent a run stored (the expiry sweeper's timer)."""

    def graph(self, name: str) -> CompiledGraph:
        graph = self._graphs.get(name)
        if graph is None:  # a thread of a graph this deployment no longer serves
            raise InvalidRequestError(
                f"Graph {name!r} is not served here (CONSENTRY_GRAPHS).",
                code="unknown_graph",
                details={"graph": name, "available": sorted(self._graphs)},
            )
        return graph

    @property
    def consent_ttl(self) -> timedelta:
        """How long a consent waits for a decision when its request names no deadline."""
        return self._consent_ttl

    @property
    def running(self) -> int:
        """How many runs this process is executing."""
        return len(self._running)

    @property
    def graph_names(self) -> list[str]:
        return sorted(self._graphs)

    async def position(self, spec: GraphSpec, thread_id: str) -> GraphPosition:
        """Where the thread's graph stands, from one checkpoint read."""
        state = await self.graph(spec.name).aget_state(_config(thread_id))
        metadata: Mapping[str, Any] = state.metadata or {}
        written_by, input_index = metadata.get(RUN_MARK), metadata.get(INPUT_MARK)
        return GraphPosition(
            waiting=frozenset(interrupt.id for interrupt in state.interrupts),
            # ``tasks`` (not ``next``): a step whose tasks all finished but whose checkpoint was
            # not written yet (the run stopped at that boundary) lists them with their writes.
            unfinished=bool(state.tasks) and not state.interrupts,
            interrupts=tuple(state.interrupts),
            asking=frozenset(task.name for task in state.tasks if task.interrupts),
            written_by=written_by if isinstance(written_by, str) else None,
            input_index=input_index if isinstance(input_index, int) else None,
        )

    def launch(
        self,
        owner: Principal,
        *,
        spec: GraphSpec,
        thread_id: str,
        run_id: str,
        claim: Claim,
        trigger: Trigger,
        consent_policy: str,
        graph_inputs: list[GraphInput],
        resumed: frozenset[str] = frozenset(),
    ) -> ActiveRun:
        """Start the run as a task. ``resumed``: the nodes that asked the consents its input
        answers (their first step gets the trigger's ``RESUMED_LABELS`` label)."""
        events = RunEventStream(
            thread_id=thread_id,
            run_id=run_id,
            last_seq=claim.last_seq,
            reserved_until=claim.last_seq + SEQ_RESERVATION,
            clock=self._clock,
        )
        # Sent with the run's first stored chunk (store before send, like every durable event).
        events.record(events.make(RunStartedEvent, graph=spec.name, trigger=trigger))
        context = GraphContext(
            notes=OwnerNotesStore(self._db, owner, self._clock),
            effects=OwnerEffectLedger(self._db, owner, self._clock),
            user=owner.display,
            conversation_window=self._limits.conversation_window,
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
        run = _RunContext(
            owner,
            spec,
            events,
            context,
            trigger,
            consent_policy,
            meter,
            claim.fencing_token,
            observer,
            resumed,
        )
        run.progress = ProgressBatcher(events, partial(self._store_rows, run))
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

    async def _execute(self, run: _RunContext, graph_inputs: list[GraphInput]) -> None:
        events = run.events
        bind_run(thread=events.thread_id, run=events.run_id)  # this task's log lines name it
        outcome = _Outcome()
        mapper = ChunkMapper(
            run.spec, resumed=run.resumed, resumed_label=RESUMED_LABELS.get(run.trigger)
        )
        inputs = list(graph_inputs)
        try:
            async with asyncio.timeout(self._limits.timeout_seconds):
                await self._load_usage(run)
                if run.trigger in ("recovery", "retry"):
                    mapper = ChunkMapper(run.spec, said=await self._told_before(run))
                index = 0
                while inputs:
                    mapper.interrupts.clear()
                    await self._stream(run, mapper, inputs.pop(0), index)
                    index += 1
                    if mapper.interrupts and (command := await self._decide_by_policy(run, mapper)):
                        inputs.append(command)
            # Only a resume can meet a consent asked before (a parallel branch re-raising it).
            resumed = run.trigger != "message" or len(graph_inputs) > 1
            ids = [i.id for i in mapper.interrupts]
            known = await self._known_approvals(ids) if resumed else set()
            outcome.consents = [
                self._consent(run, i.id, i.value) for i in mapper.interrupts if i.id not in known
            ]
            if mapper.interrupts:
                outcome.reason = "interrupted"
            elif run.trigger == "expiry":
                outcome.reason = "expired"
        except asyncio.CancelledError:
            # Only shutdown (past its grace) and a lost lease cancel a run's task.
            await asyncio.shield(self._suspend(run))
            raise
        except LeaseLostError:
            log.warning(
                "a run lost its lease (another process took it over); it stops, storing nothing",
                extra={"thread_id": events.thread_id, "run_id": events.run_id},
            )
            run.stop = "lease_lost"
            await self._suspend(run)
            return
        except _StopRequestedError:
            if run.stop != "cancel":
                await self._suspend(run)
                return
            outcome = _Outcome(reason="cancelled")
        except GraphRecursionError:
            outcome = _Outcome(reason="step_limit")
        except BudgetExhaustedError:
            outcome = _Outcome(reason="budget_exhausted")
        except TimeoutError:
            outcome = _Outcome(reason="timeout")
        except Exception as exc:
            failure = describe_failure(exc)
            log.exception(
                "run failed",
                extra={
                    "thread_id": events.thread_id,
                    "run_id": events.run_id,
                    "code": failure.code,
                },
            )
            outcome = _Outcome(reason="failed", error_code=failure.code)
            events.record(
                events.make(
                    ErrorEvent,
                    code=failure.code,
                    message=failure.message,
                    retryable=failure.retryable,
                )
            )
        await asyncio.shield(self._finish(run, outcome))

    async def _stream(
        self, run: _RunContext, mapper: ChunkMapper, graph_input: GraphInput, index: int
    ) -> None:
        """Stream the run's graph input number ``index``: its checkpoints name the run and the
        input (``RUN_MARK``, ``INPUT_MARK``)."""
        events = run.events
        config = _config(events.thread_id)
        config["recursion_limit"] = self._limits.max_steps
        config["metadata"] = {RUN_MARK: events.run_id, INPUT_MARK: index}
        callbacks: list[BaseCallbackHandler] = [run.meter, self._model_metrics]
        if run.observer.spans is not None:
            callbacks.append(ModelCallSpans(run.observer.spans))
        config["callbacks"] = callbacks
        if isinstance(graph_input, dict) and run.trigger == "message":
            # A message is the transcript's once, from the run the client started: a recovery
            # or a retry that gives it to the graph again finds it there already.
            events.transcript.extend(
                TranscriptEntry(str(m.id), "user", m.text)
                for m in graph_input.get("messages", [])
                if isinstance(m, HumanMessage)
            )
        async for mode, chunk in self.graph(run.spec.name).astream(
            graph_input,
            config,
            context=run.context,
            stream_mode=STREAM_MODES,
            durability="sync",
        ):
            run.observer.chunk(mode, chunk)
            for event_type, fields in mapper.map(mode, chunk):
                events.record(events.make(event_type, **fields))
            # Durable events are stored before they are sent (at most one transaction per chunk,
            # progress held for the next one: ``step_batching``; token chunks carry none and cost
            # no write), so a client that rejoins after a crash finds everything it saw.
            await run.progress.after_chunk()
            if mode == "updates" and run.stop is not None:
                raise _StopRequestedError  # a step just ended: its checkpoint is saved
            if events.unreserved < SEQ_RESERVATION // 4:
                async with self._db.write() as conn:
                    events.reserved_until = await leases_repo.extend_reservation(
                        conn,
                        events.thread_id,
                        run_id=events.run_id,
                        fencing_token=run.fencing_token,
                        reserve=SEQ_RESERVATION,
                    )

    async def _store_events(self, conn: DbConnection, run: _RunContext) -> None:
        """Store the run's recorded durable events, fenced by its lease."""
        await self._insert_events(conn, run, run.events.take_durable())

    async def _store_rows(self, run: _RunContext, rows: list[OutgoingEvent]) -> None:
        async with self._db.write() as conn:
            await self._insert_events(conn, run, rows)

    async def _insert_events(
        self, conn: DbConnection, run: _RunContext, rows: list[OutgoingEvent]
    ) -> None:
        """Insert events fenced by the run's lease, and what they add to the transcript: the
        user's messages given to the graph since the last write, then ``message`` events."""
        now = self._clock()
        await events_repo.insert_events(
            conn, run.events, rows, fencing_token=run.fencing_token, now=now
        )
        said = [json.loads(row.data) for row in rows if row.type == "message"]
        await add_to_transcript(
            conn,
            run.events.thread_id,
            [
                *run.events.take_transcript(),
                *(TranscriptEntry(m["message_id"], "assistant", m["content"]) for m in said),
            ],
            now=now,
        )

    async def _load_usage(self, run: _RunContext) -> None:
        """With a token budget set, what the thread and tenant used before this run."""
        if not run.meter.limited:
            return
        async with self._db.read() as conn:
            thread_used, tenant_used = await threads_repo.token_usage(
                conn, run.events.thread_id, run.owner.tenant
            )
        run.meter.thread_used, run.meter.tenant_used = thread_used, tenant_used

    async def _told_before(self, run: _RunContext) -> frozenset[Said]:
        """The messages and notes the runs this continuation continues stored already."""
        thread_id = run.events.thread_id
        async with self._db.read() as conn:
            chain = await runs_repo.continued_runs(conn, thread_id, run_id=run.events.run_id)
            told = await events_repo.told_by_runs(conn, thread_id, chain)
        return frozenset(
            said for row in told if (said := said_by(row.type, json.loads(row.data))) is not None
        )

    async def _known_approvals(self, ids: list[str]) -> set[str]:
        """Interrupts that already have an approval: a consent still pending from before (a
        parallel branch re-raises it with the same id) is not asked again."""
        if not ids:
            return set()
        async with self._db.read() as conn:
            return await approvals_repo.existing_approval_ids(conn, ids)

    async def _decide_by_policy(self, run: _RunContext, mapper: ChunkMapper) -> Command[Any] | None:
        """With an ``auto_approve`` or ``auto_reject`` thread, record the policy's decision on
        every consent that allows it (never on ``always_ask`` kinds) and return the resume."""
        if run.consent_policy == "ask":
            return None
        decision: Decision = "approve" if run.consent_policy == "auto_approve" else "reject"
        decided = []
        for interrupt in mapper.interrupts:
            request = ConsentRequest.model_validate(interrupt.value)
            if not request.always_ask and decision in request.allowed_decisions:
                decided.append(self._consent(run, interrupt.id, interrupt.value))
        if not decided:
            return None
        now = self._clock()
        answers = {
            consent.approval_id: ConsentDecision(
                approval_id=consent.approval_id, decision=decision, decided_by="policy"
            )
            for consent in decided
        }
        events = run.events
        for consent in decided:
            events.record(consent)
        await run.progress.settle()
        async with self._db.write() as conn:
            for consent in decided:
                row = await store_consent(conn, run.owner, consent, now=now)
                await record_decision(
                    conn,
                    run.owner,
                    row=row,
                    decision=answers[consent.approval_id],
                    run_id=events.run_id,
                    now=now,
                )
            await self._store_events(conn, run)
        events.flush()
        for consent in decided:
            self._metrics.consent_requested(run.spec.name, consent.kind)
            self._metrics.decided(
                kind=consent.kind, decision=decision, decided_by="policy", asked_at=now, now=now
            )
        return Command(resume={i: a.model_dump(mode="json") for i, a in answers.items()})

    def _consent(self, run: _RunContext, approval_id: str, value: Any) -> ConsentEvent:
        return consent_event(
            run.events,
            run.spec,
            approval_id=approval_id,
            value=value,
            default_ttl=self._consent_ttl,
            now=self._clock(),
        )

    async def _finish(self, run: _RunContext, outcome: _Outcome) -> None:
        """Store everything the run produced in one transaction, then send consent + final.

        If that transaction fails, a second, smaller one still ends the run as ``failed`` and
        frees the thread (the events made so far are logged as lost); only if that fails too does
        the thread wait for the start-up recovery of the next process."""
        events = run.events
        await run.progress.settle()
        final = events.make(FinalEvent, reason=outcome.reason, usage=run.meter.usage)
        for event in (*outcome.consents, final):
            events.record(event)
        try:
            await self._store_end(run, outcome)
        except LeaseLostError:
            log.warning(
                "a run lost its lease before it could store its end; another process has it",
                extra={"thread_id": events.thread_id, "run_id": events.run_id},
            )
            run.observer.stopped()
            events.discard_unsent()
            events.close(suspended=True)
            return
        except Exception:
            log.exception(
                "could not store the end of a run",
                extra={"thread_id": events.thread_id, "run_id": events.run_id},
            )
            self._metrics.database_error("run_end")
            outcome = _Outcome("failed", "storage_error")
            events.discard_unsent()
            events.record(
                events.make(
                    ErrorEvent,
                    code="storage_error",
                    retryable=True,
                    message="The run's result could not be stored.",
                )
            )
            events.record(events.make(FinalEvent, reason="failed", usage=run.meter.usage))
            try:
                await self._store_end(run, outcome)
            except Exception:
                log.exception(
                    "could not record the failure of a run either; the next start recovers it",
                    extra={"thread_id": events.thread_id, "run_id": events.run_id},
                )
        run.observer.ended(outcome.reason)
        for consent in outcome.consents:
            self._metrics.consent_requested(run.spec.name, consent.kind)
            self.on_consent_requested(consent.expires_at)
        events.flush()
        events.close()
        self._ended(events.thread_id, events.run_id)  # the thread is free: a cancel finds nothing
        if outcome.reason != "interrupted":  # a consent's decision comes soon: prune after it
            await self._prune_checkpoints(run)

    async def _prune_checkpoints(self, run: _RunContext) -> None:
        """With ``CONSENTRY_CHECKPOINT_RETENTION=latest``, keep only the thread's newest
        checkpoint: the one a resume, a retry or a takeover starts from. Called when a run ends
        without waiting for a consent, so a conversation that pauses for one is pruned once, after
        its decision. Best effort: a prune that fails (or loses a race to the next run) leaves
        the older ones for the next run's."""
        saver = self._prunable.get(run.spec.name)
        if saver is None:
            return
        try:
            await saver.aprune([run.events.thread_id], strategy="keep_latest")
        except Exception:
            log.warning(
                "could not prune a thread's older checkpoints; the next run tries again",
                extra={"thread_id": run.events.thread_id},
                exc_info=True,
            )

    async def _suspend(self, run: _RunContext) -> None:
        """Stop without ending: store the events made so far and give up the lease, so the next
        process continues the run from its last checkpoint. With the lease lost, store nothing
        (the process that took the run over owns it now). Listeners get no ``final``: the stream
        ends, and the client rejoins with ``Last-Event-ID``."""
        events = run.events
        run.observer.stopped()
        await run.progress.settle()
        if run.stop == "lease_lost":
            events.discard_unsent()
        else:
            try:
                async with self._db.write() as conn:
                    await self._store_events(conn, run)
                    await leases_repo.suspend_lease(
                        conn,
                        events.thread_id,
                        run_id=events.run_id,
                        fencing_token=run.fencing_token,
                        now=self._clock(),
                    )
            except Exception:
                log.exception(
                    "could not store a suspended run; the lease expires and it is taken over",
                    extra={"thread_id": events.thread_id, "run_id": events.run_id},
                )
                events.discard_unsent()
            events.flush()
        events.close(suspended=True)

    def _ended(self, thread_id: str, run_id: str) -> None:
        self.leases.forget(run_id)
        run = self._active.get(thread_id)
        if run is not None and run.events.run_id == run_id:
            del self._active[thread_id]

    def _leases_lost(self, run_ids: set[str]) -> None:
        """Another process took these runs over (or their leases could not be renewed in time):
        stop them now, mid-step, storing nothing."""
        for run in list(self._active.values()):
            if run.events.run_id in run_ids and run.task is not None:
                run.stop = "lease_lost"
                run.task.cancel()

    async def _store_end(self, run: _RunContext, outcome: _Outcome) -> None:
        events, owner = run.events, run.owner
        now = self._clock()
        async with self._db.write() as conn:
            await self._store_events(conn, run)
            for consent in outcome.consents:
                await store_consent(conn, run.owner, consent, now=now)
            await runs_repo.record_run_end(
                conn,
                owner,
                thread_id=events.thread_id,
                run_id=events.run_id,
                reason=outcome.reason,
                error_code=outcome.error_code,
                now=now,
                usage=run.meter.usage,
            )
            # A run that stopped half-way may leave consents pending (a parallel branch's): the
            # thread still waits for them.
            if outcome.reason == "cancelled":
                await approvals_repo.cancel_run_approvals(conn, events.run_id, now=now)
            waiting = outcome.reason == "interrupted" or (
                outcome.reason in ("failed", "cancelled")
                and bool(await approvals_repo.pending_approvals(conn, events.thread_id))
            )
            await leases_repo.release_thread(
                conn,
                events.thread_id,
                run_id=events.run_id,
                fencing_token=run.fencing_token,
                status="awaiting_consent" if waiting else "idle",
                reason=outcome.reason,
                last_seq=events.last_seq,
                now=now,
                tokens_used=run.meter.run_tokens,
            )

    def active_stream(self, thread_id: str) -> RunEventStream | None:
        """The events of the thread's run active in this process, if any."""
        run = self._active.get(thread_id)
        return run.events if run is not None else None

    def cancel(self, thread_id: str) -> str | None:
        """Ask the thread's active run to stop at its next step boundary; its run id, or None
        when the thread has no active run here."""
        run = self._active.get(thread_id)
        if run is None:
            return None
        run.stop = run.stop or "cancel"
        return run.events.run_id

    def cancel_run(self, run_id: str) -> None:
        """``cancel`` by run id, for a cancel another process received (a notification)."""
        for thread_id, run in list(self._active.items()):
            if run.events.run_id == run_id:
                self.cancel(thread_id)

    def suspend_all(self) -> None:
        """The server is shutting down: every run stops at its next step boundary, for the next
        process to continue (idempotent)."""
        stopping = [run for run in self._active.values() if run.stop is None]
        for run in stopping:
            run.stop = "suspend"
        if stopping:
            log.warning(
                "shutting down: %d run(s) stop at their next step boundary, to be continued "
                "by the next process",
                len(stopping),
            )

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


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}
