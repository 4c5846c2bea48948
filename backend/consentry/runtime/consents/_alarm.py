"""When the expiry sweeper should look again. Made first and handed to everyone who learns of a
deadline (a run that stores a consent, a decision that finds its consent overdue, a notification
of a consent another replica stored) and to the sweeper, which waits on it: nobody needs the
sweeper itself, so nothing is wired after construction."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime

__all__ = ["ExpiryAlarm"]


class ExpiryAlarm:
    def __init__(self) -> None:
        self._ring = asyncio.Event()
        self.planned: datetime | None = None
        """When the sweeper plans to look next (None: it is looking now)."""

    def consent_requested(self, expires_at: datetime | None) -> None:
        """A consent was stored: ring only if it expires before the planned look (one without
        a deadline never does)."""
        if expires_at is None:
            return
        if self.planned is None or expires_at < self.planned:
            self._ring.set()

    def overdue(self) -> None:
        """A decision found its consent overdue: look now."""
        self._ring.set()

    async def wait(self, seconds: float) -> None:
        """Until it rings or ``seconds`` passed."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ring.wait(), timeout=seconds)
        self._ring.clear()
