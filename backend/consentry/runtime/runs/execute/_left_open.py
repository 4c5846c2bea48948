"""Runs this process left open, on SQLite: the file refused a write of theirs for now (its disk
full, its lock held past the busy timeout, an I/O error), as a step or the end was stored, or
neither their end nor their failure could be stored; so their thread still shows them running,
and nothing they did not store was sent. On PostgreSQL a run's lease expires and a replica's
takeover closes and continues it; on SQLite the one process on the file does that itself, as
soon as the file takes writes again (``recover.LeftRunCloser``), rather than at its next start.

A run is continued at most once that way: a run left open that was itself such a continuation
(trigger ``recovery``), or that a client had cancelled, is only closed (``POST
/v1/threads/{id}/retry`` continues it), so that a refusal that keeps coming back (a disk with
room for the close but not for the step, a graph's own SQLite file failing) cannot loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

__all__ = ["LeftOpenRuns"]


class LeftOpenRuns:
    """The runs left open (run id → whether to continue its work), and a wake-up for whoever
    closes them (no timer while there is none)."""

    def __init__(self) -> None:
        self._runs: dict[str, bool] = {}
        self._added = asyncio.Event()

    def add(self, run_id: str, *, continue_work: bool) -> None:
        self._runs[run_id] = continue_work
        self._added.set()

    async def wait(self) -> dict[str, bool]:
        """The runs left open, once there is one: whether each is to be continued."""
        await self._added.wait()
        return dict(self._runs)

    def closed(self, run_ids: Iterable[str]) -> None:
        """These are closed (or were found closed already)."""
        for run_id in run_ids:
            self._runs.pop(run_id, None)
        if not self._runs:
            self._added.clear()
