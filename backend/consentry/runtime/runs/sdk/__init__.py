"""What only the LangGraph SDK face needs beyond the run service: runs that wait for their
thread's active run (the room ``queue``: the SDK's ``multitask_strategy="enqueue"``), many runs
cancelled at once (``_bulk_cancel``), a run rolled back (``_rollback``), a thread's runs as the
SDK reads them (``_run_records``), and threads written outside a run (``_thread_writes``, with
``_branches``). The top room of ``runs``: it calls the run service
(``_service``) like any face."""

from __future__ import annotations

from consentry.runtime.runs.sdk._bulk_cancel import cancel_many
from consentry.runtime.runs.sdk._rollback import RunRollback
from consentry.runtime.runs.sdk._run_records import RunRecords
from consentry.runtime.runs.sdk._thread_writes import ThreadWriter
from consentry.runtime.runs.sdk.queue import Queued, RunQueue, Waiter

__all__ = [
    "Queued",
    "RunQueue",
    "RunRecords",
    "RunRollback",
    "ThreadWriter",
    "Waiter",
    "cancel_many",
]
