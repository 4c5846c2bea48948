"""What the long-lived loops of a process (the expiry sweeper, the run worker, the takeover, the
notifications listener) share: one task each, alive or not (``GET /readyz``)."""

from __future__ import annotations

import asyncio

__all__ = ["BackgroundLoop"]


class BackgroundLoop:
    _task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Its task was started and has not ended."""
        return self._task is not None and not self._task.done()
