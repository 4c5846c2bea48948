"""Runs: start one (a message, a decision, a retry, an expiry, a recovery), execute it as a
task that outlives its request, store its events and its end, and let clients join it.

The one run service every face calls is :class:`RunService` (``start``, ``decide``, ``cancel``,
``retry``, ``join``, ``replay``; and ``expire``, ``take_over_dead_runs`` for the background
loops); :class:`ThreadReader` reads threads (and a thread's graph state, :class:`GraphState`);
:class:`ThreadWriter` creates, updates and deletes them outside a run (the LangGraph SDK face),
:class:`RunRecords` reads a thread's runs as the SDK's (and keeps their metadata), and
:class:`Assistants` shows the served graphs as the SDK's assistants. The stages live in
private modules: ``_targets`` (the thread a request is for), ``_messages`` and ``_decisions``
(starting a run), ``_launcher`` and ``_claims`` (claiming and launching it), ``_inputs`` and
``_continuation`` (what a run starts with), ``_executor``, ``_run_store`` and ``_run_consents``
(the task), ``_event_stream``, ``_step_batching``, ``_stream_mapping`` and ``_graph_outputs``
(its events, and LangGraph's own outputs for the listeners that ask for them),
``_joins`` (following it), ``_run_queue`` (runs that wait for their thread's active run),
``_recovery``, ``_dead_runs``, ``_takeover`` and ``_worker`` (runs
of other processes, and retries); ``_graph_state``, ``_thread_writes``, ``_run_records`` and
``_assistants``."""

from __future__ import annotations

from consentry.runtime.runs._assistants import Assistant, Assistants, assistant_uuid
from consentry.runtime.runs._event_stream import (
    GRAPH_OUTPUT_MODES,
    SUBGRAPH_OUTPUT_MODES,
    SUBGRAPHS,
    RunSuspendedError,
    graph_output_mode,
)
from consentry.runtime.runs._executor import RunExecutor
from consentry.runtime.runs._graph_outputs import split_output
from consentry.runtime.runs._graph_state import GraphState
from consentry.runtime.runs._reads import ThreadReader
from consentry.runtime.runs._run_queue import Queued, RunQueue, Waiter
from consentry.runtime.runs._run_records import RunRecords
from consentry.runtime.runs._run_types import SHUTDOWN_GRACE_SECONDS, ActiveRun, RunLimits
from consentry.runtime.runs._service import RunService
from consentry.runtime.runs._takeover import RunTakeover
from consentry.runtime.runs._thread_writes import ThreadWriter
from consentry.runtime.runs._worker import RunWorker

__all__ = [
    "GRAPH_OUTPUT_MODES",
    "SHUTDOWN_GRACE_SECONDS",
    "SUBGRAPHS",
    "SUBGRAPH_OUTPUT_MODES",
    "ActiveRun",
    "Assistant",
    "Assistants",
    "GraphState",
    "Queued",
    "RunExecutor",
    "RunLimits",
    "RunQueue",
    "RunRecords",
    "RunService",
    "RunSuspendedError",
    "RunTakeover",
    "RunWorker",
    "ThreadReader",
    "ThreadWriter",
    "Waiter",
    "assistant_uuid",
    "graph_output_mode",
    "split_output",
]
