"""What the long-lived loops of a process (the expiry sweeper, the webhook sender, the cron
scheduler, the run worker, the takeover, the notifications listener) share: one task each, alive
or not (``GET /readyz``), and for a loop of passes over the database (:meth:`_passes`) a stop
between its statements."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

__all__ = ["BackgroundLoop"]

log = logging.getLogger(__name__)


class BackgroundLoop:
    _task: asyncio.Task[None] | None = None
    _stopping: bool = False
    """Asked to stop: the loop starts no new pass."""
    _passing: bool = False
    """In a pass (its statements), which a stop lets end."""

    @property
    def running(self) -> bool:
        """Its task was started and has not ended."""
        return self._task is not None and not self._task.done()

    def _start(self, run: Callable[[], Coroutine[Any, Any, None]], *, name: str) -> None:
        """Start ``run`` as the loop's task, unless it was started."""
        if self._task is None:
            self._task = asyncio.create_task(run(), name=name)

    async def _cancel(self) -> None:
        """Cancel the loop's task wherever it is, and wait for it to end."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _passes(
        self,
        one_pass: Callable[[], Awaitable[float]],
        *,
        wait: Callable[[float], Awaitable[None]],
        retry_seconds: float,
        failure: str,
    ) -> None:
        """Make passes until asked to stop: each says how many seconds to ``wait`` before the
        next (a pass that failed, the database away, is logged as ``failure`` and tried again
        after ``retry_seconds``)."""
        while not self._stopping:
            self._passing = True
            try:
                delay = await one_pass()
            except Exception:
                log.exception(failure)
                delay = retry_seconds
            finally:
                self._passing = False
            if self._stopping:
                return
            await wait(delay)

    async def _stop_between_passes(self, wait_seconds: float) -> None:
        """Stop between statements: a pass under way ends first (up to ``wait_seconds``), for a
        task cancelled inside a database statement can leave its connection out of the pool;
        the wait for the next pass is cancelled."""
        if self._task is None:
            return
        self._stopping = True
        if self._passing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._task), wait_seconds)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
