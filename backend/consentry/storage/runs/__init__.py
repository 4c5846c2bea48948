"""Runs: one row per run (trigger, status, terminal reason, times), and the queue of runs that
API-only replicas hand to workers (status ``queued``, with their graph inputs).

The face of a small room: a run's life in its row (``_lifecycle``: started, ended, handed to the
workers, cancelled across processes, continued after a crash) and the row as read back
(``_records``: the thread's runs, one run, a run deleted on the LangGraph SDK face)."""

from __future__ import annotations

from consentry.storage.runs._lifecycle import (
    CANCELS_CHANNEL,
    ROLL_BACK,
    RUNS_CHANNEL,
    TakenRun,
    continued_runs,
    end_run,
    queue_run,
    queued_runs,
    record_run_end,
    recovery_of,
    request_cancel,
    start_run,
    take_queued_run,
)
from consentry.storage.runs._records import (
    RunRecord,
    RunStatus,
    delete_run,
    last_run,
    last_run_trigger,
    run_status,
    set_run_metadata,
    thread_run,
    thread_runs,
)

__all__ = [
    "CANCELS_CHANNEL",
    "ROLL_BACK",
    "RUNS_CHANNEL",
    "RunRecord",
    "RunStatus",
    "TakenRun",
    "continued_runs",
    "delete_run",
    "end_run",
    "last_run",
    "last_run_trigger",
    "queue_run",
    "queued_runs",
    "record_run_end",
    "recovery_of",
    "request_cancel",
    "run_status",
    "set_run_metadata",
    "start_run",
    "take_queued_run",
    "thread_run",
    "thread_runs",
]
