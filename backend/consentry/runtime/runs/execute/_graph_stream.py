"""Streaming a run's graph: the checkpoint reads and the ``astream`` loop of one run.

``GraphStreamer`` knows the deployment's compiled graphs; for a run it reads where the thread's
graph stands (``position``), streams one graph input at a time and maps each chunk to events
(stored before sent, batched by ``step_batching``), and tells a recovery what the runs it continues
told already (so a message or a note edit is not told twice).

A chunk is also recorded as it is (``_graph_outputs``), for the listeners that asked for its mode,
when some did (``RunEventStream.graph_modes``): for a run nobody asked, that is one test per
chunk, and nothing is serialized. When a listener asked before the graph started for a
subgraph's outputs (``subgraphs:<mode>``), the graph streams with LangGraph's ``subgraphs=True``;
for ``checkpoints`` or ``debug``, with those modes too; for ``events``, with LangChain's event
handler among its callbacks (``_event_outputs``). Those chunks go to the listeners that asked
only, and the run's events are the same as without.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any, cast

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import StateSnapshot, StreamMode

from consentry.errors import InvalidRequestError
from consentry.observability.metrics import ModelCallMetrics
from consentry.observability.tracing import ModelCallSpans
from consentry.runtime.runs.execute._event_outputs import EventRecorder
from consentry.runtime.runs.execute._output_recording import GraphOutputs
from consentry.runtime.runs.execute._run_types import (
    INPUT_MARK,
    RUN_MARK,
    SEQ_RESERVATION,
    GraphInput,
    GraphPosition,
    RunContext,
    RunLimits,
    StopRequestedError,
)
from consentry.runtime.runs.execute._stream_mapping import STREAM_MODES, ChunkMapper, Said, said_by
from consentry.storage import events as events_repo
from consentry.storage import leases as leases_repo
from consentry.storage import runs as runs_repo
from consentry.storage import threads as threads_repo
from consentry.storage.checkpoints import READ_KEY, RUN_KEY, ConsentrySaver, HeadRead
from consentry.storage.db.database import Database
from consentry.storage.leases import LeaseLostError
from consentry.storage.transcript import TranscriptEntry
from consentry_graphs.registry import CompiledGraph, GraphSpec

__all__ = ["RESUME", "GraphStreamer"]

log = logging.getLogger(__name__)

_LANGGRAPH_STARTING: tuple[StreamMode, ...] = ("checkpoints", "debug")
"""The modes LangGraph streams only when a listener asked for them before the graph started."""

RESUME = "__resume__"
"""The channel of the resume values LangGraph gave a task (private in LangGraph 1.x:
``langgraph._internal._constants.RESUME``; a unit test checks it is still that)."""


class GraphStreamer:
    def __init__(
        self,
        *,
        db: Database,
        graphs: Mapping[str, CompiledGraph],
        limits: RunLimits,
        model_metrics: ModelCallMetrics,
    ) -> None:
        self._db = db
        self._graphs = graphs
        self._limits = limits
        self._model_metrics = model_metrics

    def graph(self, name: str) -> CompiledGraph:
        """The compiled graph ``name`` (``unknown_graph`` when it is not served here)."""
        graph = self._graphs.get(name)
        if graph is None:  # a thread of a graph this deployment no longer serves
            raise InvalidRequestError(
                f"Graph {name!r} is not served here (CONSENTRY_GRAPHS).",
                code="unknown_graph",
                details={"graph": name, "available": sorted(self._graphs)},
            )
        return graph

    async def position(self, spec: GraphSpec, thread_id: str) -> GraphPosition:
        """Where the thread's graph stands, from one checkpoint read (kept for the run that
        starts from it: ``GraphPosition.checkpoint``)."""
        config = _config(thread_id)
        read = HeadRead(thread_id)
        config["configurable"][READ_KEY] = read
        state = await self.graph(spec.name).aget_state(config)
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
            checkpoint=read if read.rows is not None else None,
        )

    async def forget_answer(self, spec: GraphSpec, thread_id: str, interrupt_id: str) -> bool:
        """Take a refused answer back out of the checkpoint. The node that asked raised on it
        and LangGraph keeps the resume values it gave the node (its ``__resume__`` write), so the
        next answer would meet the refused one again: drop that value, in the checkpoint (a
        subgraph's too) of the task that waits for the interrupt. False when it is not found."""
        graph = self.graph(spec.name)
        saver = graph.checkpointer
        if not isinstance(saver, BaseCheckpointSaver):
            return False
        found = _asking(await graph.aget_state(_config(thread_id), subgraphs=True), interrupt_id)
        if found is None:
            return False
        snapshot, task_id = found
        saved = await saver.aget_tuple(snapshot.config)
        given = next(
            (
                value
                for task, channel, value in (saved.pending_writes or [] if saved else [])
                if task == task_id and channel == RESUME
            ),
            None,
        )
        if saved is None or not isinstance(given, list) or not given:
            return False
        await saver.aput_writes(saved.config, [(RESUME, given[:-1])], task_id)
        return True

    async def stream(
        self, run: RunContext, mapper: ChunkMapper, graph_input: GraphInput, index: int
    ) -> None:
        """Stream the run's graph input number ``index``: its checkpoints name the run and the
        input (``RUN_MARK``, ``INPUT_MARK``)."""
        events = run.events
        config = _config(events.thread_id, run.options.configurable)
        config["recursion_limit"] = self._limits.max_steps
        config["metadata"] = {RUN_MARK: events.run_id, INPUT_MARK: index}
        # The run's checkpoint writes: fenced by its lease, each step's in one transaction with
        # the step's events (``step_batching``), older checkpoints dropped there when retained.
        config["configurable"][RUN_KEY] = run.progress
        callbacks: list[BaseCallbackHandler] = [run.meter, self._model_metrics]
        if run.observer.spans is not None:
            callbacks.append(ModelCallSpans(run.observer.spans))
        if "events" in events.graph_modes:  # asked by the request that starts the run
            callbacks.append(EventRecorder(events))
        config["callbacks"] = callbacks
        if isinstance(graph_input, dict) and run.trigger == "message":
            # A message is the transcript's once, from the run the client started: a recovery
            # or a retry that gives it to the graph again finds it there already.
            events.transcript.extend(
                TranscriptEntry(str(m.id), "user", m.text)
                for m in graph_input.get("messages", [])
                if isinstance(m, HumanMessage)
            )
        graph = self.graph(run.spec.name)
        saver = graph.checkpointer
        if isinstance(saver, ConsentrySaver):
            # What the run's graph held when it stopped at an earlier input (an interrupt a
            # consent policy answered went with the policy's decision, ``RunConsents``).
            await saver.acommit_held(run.progress)
        try:
            run.streaming = True
            try:
                await self._stream(run, mapper, graph, graph_input, config)
            finally:
                run.streaming = False
        except (asyncio.CancelledError, LeaseLostError) as stopped:
            if isinstance(saver, ConsentrySaver):
                if isinstance(stopped, LeaseLostError):
                    saver.forget_held(run.progress)  # the run stores nothing more
                elif run.cut:  # a cancel cut the step: as a failure in it, what finished is kept
                    await self._commit_unfinished(saver, run)
                # Otherwise (a shutdown, the run's time limit) what the graph held goes with
                # the run's suspension or its end (``RunStore.store_events``).
            raise
        except BaseException:
            if isinstance(saver, ConsentrySaver):
                await self._commit_unfinished(saver, run)
            raise
        # What the graph held when it stopped (an interrupt, the finished tasks of its step) goes
        # with the run's next transaction: its end, with the consents it asks, or a consent
        # policy's decision (``RunStore.store_events``).

    async def _commit_unfinished(self, saver: ConsentrySaver, run: RunContext) -> None:
        """The graph failed or was stopped in a step: keep what its finished tasks wrote (with
        what they told), or at least not hide the failure that stopped it."""
        try:
            await saver.acommit_held(run.progress)
        except Exception:
            log.warning(
                "could not store the writes of a run's unfinished step; it runs again",
                extra={"thread_id": run.events.thread_id, "run_id": run.events.run_id},
                exc_info=True,
            )

    async def _stream(
        self,
        run: RunContext,
        mapper: ChunkMapper,
        graph: CompiledGraph,
        graph_input: GraphInput,
        config: RunnableConfig,
    ) -> None:
        events = run.events
        # Asked before the graph starts, or not at all: the subgraphs' outputs, the modes
        # LangGraph streams only when asked.
        subgraph_modes = events.subgraph_modes
        starting = [m for m in _LANGGRAPH_STARTING if m in events.starting_modes]
        outputs = GraphOutputs(events)
        async for item in graph.astream(
            graph_input,
            config,
            context=run.spec.io.context_value(run.options.context)
            if run.spec.io is not None
            else run.options.context,
            stream_mode=[*STREAM_MODES, *starting] if starting else STREAM_MODES,
            interrupt_before=run.options.interrupt_before,
            interrupt_after=run.options.interrupt_after,
            durability="sync",
            subgraphs=bool(subgraph_modes),
        ):
            if subgraph_modes:
                namespace, mode, chunk = cast(tuple[tuple[str, ...], str, Any], item)
                if namespace:  # a subgraph's: for the listeners that asked, nothing else
                    outputs.record(subgraph_modes, mode, chunk, namespace=namespace)
                    await run.progress.after_chunk()
                    continue
            else:
                mode, chunk = item
            if mode in starting:  # only for the listeners that asked
                outputs.record(events.graph_modes, mode, chunk)
                await run.progress.after_chunk()
                continue
            run.observer.chunk(mode, chunk)
            if mapper.wants_told(mode, chunk):
                mapper.told(await self.told_before(run))
            for event_type, fields in mapper.map(mode, chunk):
                events.emit(event_type, fields)
            if events.graph_modes:  # a listener asked for LangGraph's own outputs
                outputs.record(events.graph_modes, mode, chunk)
            # Durable events are stored before they are sent (at most one transaction per chunk,
            # progress held for the next one: ``step_batching``; token chunks carry none and cost
            # no write), so a client that rejoins after a crash finds everything it saw.
            await run.progress.after_chunk()
            if mode == "updates" and run.stop is not None:
                raise StopRequestedError  # a step just ended: its checkpoint is saved
            if events.unreserved < SEQ_RESERVATION // 4:
                async with self._db.write() as conn:
                    events.reserved_until = await leases_repo.extend_reservation(
                        conn,
                        events.thread_id,
                        run_id=events.run_id,
                        fencing_token=run.fencing_token,
                        reserve=SEQ_RESERVATION,
                    )

    async def load_usage(self, run: RunContext) -> None:
        """With a token budget set, what the thread and tenant used before this run."""
        if not run.meter.limited:
            return
        async with self._db.read() as conn:
            thread_used, tenant_used = await threads_repo.token_usage(
                conn, run.events.thread_id, run.owner.tenant
            )
        run.meter.thread_used, run.meter.tenant_used = thread_used, tenant_used

    async def told_before(self, run: RunContext) -> frozenset[Said]:
        """The messages, notes and tool events the runs before this one stored already (those a
        recovery or a retry continues; for a resume, the run that asked)."""
        thread_id = run.events.thread_id
        async with self._db.read() as conn:
            chain = await runs_repo.continued_runs(conn, thread_id, run_id=run.events.run_id)
            told = await events_repo.told_by_runs(conn, thread_id, chain)
        return frozenset(
            said for row in told if (said := said_by(row.type, json.loads(row.data))) is not None
        )


def _asking(snapshot: StateSnapshot, interrupt_id: str) -> tuple[StateSnapshot, str] | None:
    """The snapshot (the graph's, or a subgraph's) and the task that waits for an interrupt."""
    for task in snapshot.tasks:
        if isinstance(task.state, StateSnapshot):
            inner = _asking(task.state, interrupt_id)
            if inner is not None:
                return inner
        elif any(interrupt.id == interrupt_id for interrupt in task.interrupts):
            return snapshot, task.id
    return None


def _config(thread_id: str, configurable: Mapping[str, Any] | None = None) -> RunnableConfig:
    """The thread's config, with the run's own ``configurable`` values (``RunOptions``: never
    one the server sets)."""
    return {"configurable": {**(configurable or {}), "thread_id": thread_id}}
