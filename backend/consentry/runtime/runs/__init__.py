"""Runs: start one (a message, a decision, a retry, an expiry, a recovery), execute it as a
task that outlives its request, store its events and its end, and let clients join it.

The one run service every face calls is :class:`RunService` (``_service``: ``start``,
``decide``, ``cancel``, ``retry``, ``join``, ``replay``; and ``expire``,
``take_over_dead_runs`` for the background loops). Behind it, four rooms by stage, each with a
small face, each importing only the rooms listed before it:

- ``execute``: the run's task (:class:`RunExecutor`), its graph stream, events, consents and
  stores; what a run is made of; the worker of a split deployment (:class:`RunWorker`);
- ``start``: the thread a request is for, a message or a decision, the claim and the launch;
- ``recover``: runs of dead processes and failed runs' retries (:class:`RunTakeover`,
  :class:`LeftRunCloser`);
- ``read``: joining a thread's stream, and reading threads (:class:`ThreadReader`).

Above the service, ``sdk`` holds what only the LangGraph SDK face needs: runs that wait for
their thread (:class:`RunQueue`), a thread's runs as the SDK reads them (:class:`RunRecords`),
threads written outside a run (:class:`ThreadWriter`). A thread's graph state as JSON and the
served graphs as assistants are ``runtime.graph_state`` and ``runtime.assistants``."""

from __future__ import annotations

from consentry.runtime.runs._service import RunService
from consentry.runtime.runs.execute import (
    GRAPH_OUTPUT_MODES,
    SHUTDOWN_GRACE_SECONDS,
    SUBGRAPH_OUTPUT_MODES,
    SUBGRAPHS,
    ActiveRun,
    RunExecutor,
    RunLimits,
    RunSuspendedError,
    RunWorker,
    graph_output_mode,
    split_output,
)
from consentry.runtime.runs.read import ThreadReader
from consentry.runtime.runs.recover import LeftRunCloser, RunTakeover
from consentry.runtime.runs.sdk import (
    Queued,
    RunQueue,
    RunRecords,
    RunRollback,
    ThreadWriter,
    Waiter,
    cancel_many,
)

__all__ = [
    "GRAPH_OUTPUT_MODES",
    "SHUTDOWN_GRACE_SECONDS",
    "SUBGRAPHS",
    "SUBGRAPH_OUTPUT_MODES",
    "ActiveRun",
    "LeftRunCloser",
    "Queued",
    "RunExecutor",
    "RunLimits",
    "RunQueue",
    "RunRecords",
    "RunRollback",
    "RunService",
    "RunSuspendedError",
    "RunTakeover",
    "RunWorker",
    "ThreadReader",
    "ThreadWriter",
    "Waiter",
    "cancel_many",
    "graph_output_mode",
    "split_output",
]
