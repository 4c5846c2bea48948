"""Executing a run: the task that outlives its request (``RunExecutor``), the graph's stream
and what each chunk becomes (``_graph_stream``, ``_stream_mapping``, ``_graph_outputs``), the
run's events (``_event_stream``, ``_step_batching``), the consents it meets (``_run_consents``),
what it stores (``_run_store``), how a failure is reported (``_failures``); what a run is made
of (``_run_types``), the runs active here and how each stops early (``_active_runs``), what it
starts with (``_inputs``, ``_transcripts``), and the worker that
executes the runs API-only replicas queue (``_worker``). The lowest room of ``runs``: it
imports none of the others."""

from __future__ import annotations

from consentry.runtime.runs.execute._event_stream import (
    GRAPH_OUTPUT_MODES,
    SUBGRAPH_OUTPUT_MODES,
    SUBGRAPHS,
    RunEventStream,
    RunSuspendedError,
    graph_output_mode,
)
from consentry.runtime.runs.execute._executor import RunExecutor
from consentry.runtime.runs.execute._graph_outputs import split_output
from consentry.runtime.runs.execute._inputs import dump_inputs, load_inputs
from consentry.runtime.runs.execute._left_open import LeftOpenRuns
from consentry.runtime.runs.execute._run_options import RunOptions
from consentry.runtime.runs.execute._run_types import (
    NOWHERE,
    SEQ_RESERVATION,
    SHUTDOWN_GRACE_SECONDS,
    ActiveRun,
    ClaimHold,
    GraphInput,
    GraphPosition,
    RunLimits,
    run_id_for,
)
from consentry.runtime.runs.execute._transcripts import checkpoint_transcript
from consentry.runtime.runs.execute._worker import RunWorker

__all__ = [
    "GRAPH_OUTPUT_MODES",
    "NOWHERE",
    "SEQ_RESERVATION",
    "SHUTDOWN_GRACE_SECONDS",
    "SUBGRAPHS",
    "SUBGRAPH_OUTPUT_MODES",
    "ActiveRun",
    "ClaimHold",
    "GraphInput",
    "GraphPosition",
    "LeftOpenRuns",
    "RunEventStream",
    "RunExecutor",
    "RunLimits",
    "RunOptions",
    "RunSuspendedError",
    "RunWorker",
    "checkpoint_transcript",
    "dump_inputs",
    "graph_output_mode",
    "load_inputs",
    "run_id_for",
    "split_output",
]
