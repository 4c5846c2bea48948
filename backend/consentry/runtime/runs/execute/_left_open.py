"""Runs this process left open: neither their end nor their failure could be stored (SQLite's
disk full, or its file locked past the busy timeout, as the run ended), so their thread still
shows them running and nothing of their end was sent. On PostgreSQL their lease expires and a
replica's takeover closes and continues them. On SQLite the one process on the file does it
itself, as soon as the database takes writes again (``recover.LeftRunCloser``), rather than at
its next start."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

__all__ = ["LeftOpenRuns"]


class LeftOpenRuns:
    """The run ids left open, and a wake-up for whoever closes them (no timer while empty)."""

    def __init__(self) -> None:
        self._runs: set[str] = set()
        self._added = asyncio.Event()

    def add(self, run_id: str) -> None:
        self._runs.add(run_id)
        self._added.set()

    async def wait(self) -> frozenset[str]:
        """The runs left open, once there is one."""
        await self._added.wait()
        return frozenset(self._runs)

    def closed(self, run_ids: Iterable[str]) -> None:
        """These are closed (or were found closed already)."""
        self._runs.difference_update(run_ids)
        if not self._runs:
            self._added.clear()
