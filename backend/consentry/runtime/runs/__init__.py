"""Runs: start one (a message, a decision, a retry, an expiry, a recovery), execute it as a
task that outlives its request, store its events and its end, and let clients join it.

The one run service every face calls is :class:`RunStarter` (its operations: ``start``,
``decide``, ``cancel``, ``retry``, ``expire``, ``take_over``); :class:`ThreadReader` reads threads
and joins their streams. The stages live in private modules: ``_targets`` (the thread a request
is for), ``_claims`` (claiming it), ``_inputs`` and ``_continuation`` (what a run starts with),
``_executor`` (the task), ``_event_stream``, ``_step_batching`` and ``_stream_mapping`` (its
events), ``_dead_runs``, ``_takeover`` and ``_worker`` (runs of other processes)."""

from __future__ import annotations

from consentry.runtime.runs._event_stream import RunSuspendedError
from consentry.runtime.runs._executor import (
    SHUTDOWN_GRACE_SECONDS,
    ActiveRun,
    RunExecutor,
    RunLimits,
)
from consentry.runtime.runs._reads import ThreadReader
from consentry.runtime.runs._starter import RunStarter
from consentry.runtime.runs._takeover import RunTakeover
from consentry.runtime.runs._worker import RunWorker

__all__ = [
    "SHUTDOWN_GRACE_SECONDS",
    "ActiveRun",
    "RunExecutor",
    "RunLimits",
    "RunStarter",
    "RunSuspendedError",
    "RunTakeover",
    "RunWorker",
    "ThreadReader",
]
