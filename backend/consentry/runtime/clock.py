"""Time, injected so that expiry can be tested without sleeping, and measured so that a step of
the machine's clock cannot expire or extend anything.

A server's clock is a :class:`MonotonicClock`: the wall-clock time read once, when the server
starts, advanced by a monotonic clock. Every deadline (an approval's ``expires_at``, a cron's next
time) and every lease (``lease_expires_at``) is written and compared with it. A step of the
machine's clock after the start (an operator's ``date -s``, NTP correcting a large error at
once) does not move it, so a pending approval is not expired early or kept open late, and a
replica does not take a live run over or hold a dead one's; NTP's gradual corrections, which
keep the machine on time, pace the monotonic clock too, so it does not drift. The clock counts
time the machine spent suspended (Linux's ``CLOCK_BOOTTIME``). What the server gives up: a
correction made by a step reaches it at its next start, and so does a pause its monotonic clock
did not count (a hypervisor that paused the whole virtual machine, a snapshot restored): the
server stays behind by the pause until then. Replicas agree within what their machines' clocks
did when each started. What leaves the server for other clocks to check (a webhook's signed
timestamp) and its logs use the machine's wall clock (:func:`utc_now`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

__all__ = ["Clock", "MonotonicClock", "utc_now"]

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The machine's wall clock, as it is now (steps included)."""
    return datetime.now(UTC)


def _boot_time() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


ELAPSED: Callable[[], float] = _boot_time if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic
"""Seconds of a monotonic clock, one that counts suspended time too where there is one."""


class MonotonicClock:
    """``wall()`` read once, then advanced by ``elapsed()`` (see the module)."""

    def __init__(
        self,
        *,
        wall: Callable[[], float] = time.time,
        elapsed: Callable[[], float] = ELAPSED,
    ) -> None:
        self._elapsed = elapsed
        self._started = elapsed()
        self._origin = datetime.fromtimestamp(wall(), UTC)

    def __call__(self) -> datetime:
        return self._origin + timedelta(seconds=self._elapsed() - self._started)
