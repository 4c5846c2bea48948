"""Closing the runs this process left open, on SQLite (``execute.LeftOpenRuns``): a run whose
write the file refused for now (its disk full, its lock held past the busy timeout, an I/O
error) still shows running, and nothing it did not store was sent. On PostgreSQL its lease
expires and a replica's takeover closes it; on SQLite, the only process on the file, this loop
does what the next start would, as soon as the database takes writes again: close the run as
far as its graph got and (once at most) continue it from its last checkpoint
(``RunService.close_left_open``).
It waits on the runs' wake-up, so it costs nothing while no run is left open. Each run is closed
on its own: one the database still refuses (the disk still full) is tried again after a pause
that doubles up to ``RETRY_MAX_SECONDS``; one that fails otherwise (a bug) is logged and left
for the next start, without holding the others up."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Protocol

from consentry.runtime.background import BackgroundLoop
from consentry.runtime.runs.execute import LeftOpenRuns
from consentry.storage.db.database import is_write_refused

__all__ = ["LeftRunCloser"]

log = logging.getLogger(__name__)

RETRY_FIRST_SECONDS = 0.5
"""Also the pause before the first pass: the run that was left open has ended its task."""
RETRY_MAX_SECONDS = 5.0


class LeftRunTaker(Protocol):
    """Who closes and continues them (the run service)."""

    async def close_left_open(self, runs: Mapping[str, bool]) -> int: ...


class LeftRunCloser(BackgroundLoop):
    """Closes the runs of ``left`` through ``runs``, as soon as it can (see the module)."""

    def __init__(self, *, left: LeftOpenRuns, runs: LeftRunTaker) -> None:
        self._left = left
        self._runs = runs

    async def _run(self) -> None:
        pause = RETRY_FIRST_SECONDS
        while True:
            runs = await self._left.wait()
            await asyncio.sleep(pause)
            refused = False
            for run_id, continue_work in sorted(runs.items()):
                refused = not await self._close(run_id, continue_work=continue_work) or refused
            pause = min(pause * 2, RETRY_MAX_SECONDS) if refused else RETRY_FIRST_SECONDS

    async def _close(self, run_id: str, *, continue_work: bool) -> bool:
        """Close ``run_id``; False when the database still refuses it (to be tried again)."""
        try:
            closed = await self._runs.close_left_open({run_id: continue_work})
        except Exception as exc:
            if is_write_refused(exc):
                log.warning(
                    "could not close a run left open yet (%r); trying again",
                    exc,
                    extra={"run_id": run_id},
                )
                return False
            log.exception(
                "could not close a run left open; the next start will", extra={"run_id": run_id}
            )
        else:
            if closed:
                log.warning(
                    "closed a run left open, and continued its work"
                    if continue_work
                    else "closed a run left open; POST …/retry continues it",
                    extra={"run_id": run_id},
                )
        self._left.closed({run_id})
        return True

    def start(self) -> None:
        self._start(self._run, name="left-run-closer")

    async def stop(self) -> None:
        await self._cancel()
