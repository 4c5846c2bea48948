"""The runs this process executes, by thread (:class:`ActiveRuns`), and how each is stopped
early: a client's cancel (at the next step boundary, or its step cut after
``CANCEL_GRACE_SECONDS``), the server's shutdown (at the next step boundary, for the next process
to continue), a lost lease (at once, storing nothing)."""

from __future__ import annotations

import asyncio
import logging

from consentry.runtime.runs.execute._event_stream import RunEventStream
from consentry.runtime.runs.execute._run_types import CANCEL_GRACE_SECONDS, RunContext

__all__ = ["ActiveRuns"]

log = logging.getLogger(__name__)


class ActiveRuns(dict[str, RunContext]):
    """Thread id → the run this process executes on it."""

    def stream(self, thread_id: str) -> RunEventStream | None:
        """The events of the thread's run active in this process, if any."""
        run = self.get(thread_id)
        return run.events if run is not None else None

    def ended(self, thread_id: str, run_id: str) -> None:
        run = self.get(thread_id)
        if run is not None and run.events.run_id == run_id:
            del self[thread_id]

    def cancel(
        self, thread_id: str, *, run_id: str | None = None, roll_back: bool = False
    ) -> str | None:
        """Ask the thread's active run to stop at its next step boundary, or (still in its
        step after ``CANCEL_GRACE_SECONDS``) to cut the step short (``roll_back``: and to undo
        what it wrote at its end); its run id, or None when the thread has no active run
        here (or its run is not ``run_id``, when given). A cancel asked while the server shuts
        down wins over continuing the run in the next process."""
        run = self.get(thread_id)
        if run is None or (run_id is not None and run.events.run_id != run_id):
            return None
        run.roll_back = run.roll_back or roll_back
        if run.stop in (None, "suspend"):
            run.stop = "cancel"
            asyncio.get_running_loop().call_later(CANCEL_GRACE_SECONDS, self._cut, run)
        return run.events.run_id

    def _cut(self, run: RunContext) -> None:
        """A cancelled run still in its step: the step's tasks are cancelled; what its finished
        tasks wrote is kept, and the thread goes on from there. Never the run's closing work
        (the consents its graph asked are recorded whatever the cancel): a run past its graph,
        or between its graph's invocations, stops at the next step boundary."""
        if run.stop != "cancel" or run.task is None or run.task.done():
            return
        if not run.streaming:
            asyncio.get_running_loop().call_later(CANCEL_GRACE_SECONDS, self._cut, run)
            return
        run.cut = True
        run.task.cancel()

    def cancel_run(self, run_id: str, *, roll_back: bool = False) -> None:
        """``cancel`` by run id, for a cancel another process received (a notification)."""
        for thread_id, run in list(self.items()):
            if run.events.run_id == run_id:
                self.cancel(thread_id, run_id=run_id, roll_back=roll_back)

    def suspend_all(self) -> None:
        """The server is shutting down: every run stops at its next step boundary, for the next
        process to continue (idempotent)."""
        stopping = [run for run in self.values() if run.stop is None]
        for run in stopping:
            run.stop = "suspend"
        if stopping:
            log.warning(
                "shutting down: %d run(s) stop at their next step boundary, to be continued "
                "by the next process",
                len(stopping),
            )

    def leases_lost(self, run_ids: set[str]) -> None:
        """Another process took these runs over (or their leases could not be renewed in time):
        stop them now, mid-step, storing nothing."""
        for run in list(self.values()):
            if run.events.run_id in run_ids and run.task is not None:
                run.stop = "lease_lost"
                run.task.cancel()
