"""Closing the runs this process left open, on SQLite (``execute.LeftOpenRuns``): a run whose
end and failure could not be stored (the disk of the database full, its file locked past the
busy timeout) still shows running, and nothing of its end was sent. On PostgreSQL its lease
expires and a replica's takeover closes it; on SQLite, the only process on the file, this loop
does what the next start would, as soon as the database takes writes again: close the run as
far as its graph got and continue it from its last checkpoint (``RunService.close_left_open``).
It waits on the runs' wake-up, so it costs nothing while no run is left open. Each run is closed
on its own: one the database still refuses (the disk still full) is tried again after a pause
that doubles up to ``RETRY_MAX_SECONDS``; one that fails otherwise (a bug) is logged and left
for the next start, without holding the others up."""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from consentry.runtime.background import BackgroundLoop
from consentry.runtime.runs.execute import LeftOpenRuns
from consentry.storage.db.database import is_database_unavailable

__all__ = ["LeftRunCloser"]

log = logging.getLogger(__name__)

RETRY_FIRST_SECONDS = 0.5
"""Also the pause before the first pass: the run that was left open has ended its task."""
RETRY_MAX_SECONDS = 5.0


class LeftRunTaker(Protocol):
    """Who closes and continues them (the run service)."""

    async def close_left_open(self, run_ids: frozenset[str]) -> int: ...


class LeftRunCloser(BackgroundLoop):
    """Closes the runs of ``left`` through ``runs``, as soon as it can (see the module)."""

    def __init__(self, *, left: LeftOpenRuns, runs: LeftRunTaker) -> None:
        self._left = left
        self._runs = runs

    async def _run(self) -> None:
        pause = RETRY_FIRST_SECONDS
        while True:
            run_ids = await self._left.wait()
            await asyncio.sleep(pause)
            refused = False
            for run_id in sorted(run_ids):
                refused = not await self._close(run_id) or refused
            pause = min(pause * 2, RETRY_MAX_SECONDS) if refused else RETRY_FIRST_SECONDS

    async def _close(self, run_id: str) -> bool:
        """Close ``run_id``; False when the database still refuses it (to be tried again)."""
        try:
            closed = await self._runs.close_left_open(frozenset({run_id}))
        except Exception as exc:
            if is_database_unavailable(exc):
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
                    "closed a run left open, and continued its work", extra={"run_id": run_id}
                )
        self._left.closed({run_id})
        return True

    def start(self) -> None:
        self._start(self._run, name="left-run-closer")

    async def stop(self) -> None:
        await self._cancel()
