"""The run queue's drainers: at most one task a thread, in this process, that starts the
thread's queued runs in turn (``RunQueue._drain_thread``).

A run queued while the thread's drainer looks for the next is not missed: the drainer is told
to look again (``again``), and one asleep until a run is due (``after_seconds``) is woken.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["QueueDrainers"]


class QueueDrainers:
    def __init__(self, drain_thread: Callable[[str], Coroutine[Any, Any, None]]) -> None:
        """``drain_thread``: start the thread's queued runs in turn, until none is left."""
        self._drain_thread = drain_thread
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()
        """Threads a run was queued on while their drainer looked for the next."""
        self._wakes: dict[str, asyncio.Event] = {}
        """Threads whose drainer sleeps until their next run is due: set to wake it."""

    @property
    def tasks(self) -> list[asyncio.Task[None]]:
        return list(self._tasks.values())

    def drain(self, thread_id: str) -> None:
        """Drain the thread's queue here (a drainer that is at its end looks once more)."""
        drainer = self._tasks.get(thread_id)
        if drainer is not None and not drainer.done():
            self._again.add(thread_id)
            if (wake := self._wakes.get(thread_id)) is not None:
                wake.set()  # it sleeps until a run is due: look now
            return
        task = asyncio.create_task(self._drain_thread(thread_id), name=f"run-queue:{thread_id}")
        self._tasks[thread_id] = task

        def gone(done: asyncio.Task[None]) -> None:
            if self._tasks.get(thread_id) is done:
                del self._tasks[thread_id]

        task.add_done_callback(gone)

    def looking(self, thread_id: str) -> None:
        """The thread's drainer looks for its next run now."""
        self._again.discard(thread_id)

    def queued_meanwhile(self, thread_id: str) -> bool:
        """Whether a run was queued on the thread since its drainer last looked."""
        return thread_id in self._again

    async def sleep(self, thread_id: str, seconds: float) -> None:
        """Wait ``seconds`` (until a run is due), or until a run is queued on the thread."""
        if thread_id in self._again:
            return
        wake = self._wakes.setdefault(thread_id, asyncio.Event())
        wake.clear()
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), seconds)
        finally:
            self._wakes.pop(thread_id, None)
