"""What only the LangGraph SDK face needs beyond the run service: runs that wait for their
thread's active run (``_run_queue``, its waits in ``_queue_waits``, the SDK's
``multitask_strategy="enqueue"``), many runs cancelled at once (``_bulk_cancel``), a run rolled
back (``_rollback``), a thread's
runs as the SDK reads them (``_run_records``), and threads written outside a run
(``_thread_writes``, with ``_branches``). The top room of ``runs``: it calls the run service
(``_service``) like any face."""

from __future__ import annotations

from consentry.runtime.runs.sdk._bulk_cancel import cancel_many
from consentry.runtime.runs.sdk._queue_waits import Queued, Waiter
from consentry.runtime.runs.sdk._rollback import RunRollback
from consentry.runtime.runs.sdk._run_queue import RunQueue
from consentry.runtime.runs.sdk._run_records import RunRecords
from consentry.runtime.runs.sdk._thread_writes import ThreadWriter

__all__ = [
    "Queued",
    "RunQueue",
    "RunRecords",
    "RunRollback",
    "ThreadWriter",
    "Waiter",
    "cancel_many",
]
