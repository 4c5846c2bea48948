"""What other processes did, told by PostgreSQL notifications (triggers of migration 0007).

- ``consentry_events`` (payload: a thread id): new stored events. The streams following a run
  that executes in another process are woken and read them from the table.
- ``consentry_consents`` (payload: a deadline, epoch seconds): a consent was asked somewhere; the
  expiry sweeper re-plans if it expires before its planned wake-up.
- ``consentry_runs`` (payload: a run id): an API-only replica queued a run; workers take it.
- ``consentry_cancels`` (payload: a run id): a client asked any replica to cancel a run; the
  process executing it stops it at its next step boundary.
- ``consentry_approvals`` (payload: an owner, ``tenant/user``): one of the owner's approvals
  was requested, decided, expired or cancelled; the owner's approvals feeds read the change
  (``runtime.approval_feed``). Sent by ``storage.database.notify_at_commit``, which on SQLite
  delivers to this process right after the commit (:meth:`EventNotifications.deliver`).

Each process keeps one ``LISTEN`` connection. If it drops, every waiter is woken (so none misses
what happened meanwhile) and the listener reconnects. On SQLite one process serves the file and
streams follow their runs in memory: the listener does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from consentry.runtime.background import BackgroundLoop
from consentry.storage.audit import APPROVALS_CHANNEL
from consentry.storage.database import libpq_url
from consentry.storage.runs import CANCELS_CHANNEL, RUNS_CHANNEL

__all__ = [
    "APPROVALS_CHANNEL",
    "CANCELS_CHANNEL",
    "CONSENTS_CHANNEL",
    "EVENTS_CHANNEL",
    "RUNS_CHANNEL",
    "EventNotifications",
]

log = logging.getLogger(__name__)
EVENTS_CHANNEL = "consentry_events"
CONSENTS_CHANNEL = "consentry_consents"
RECONNECT_SECONDS = 1.0


class EventNotifications(BackgroundLoop):
    def __init__(
        self,
        database_url: str | None,
        *,
        on_consent_requested: Callable[[datetime], None],
        on_cancel_requested: Callable[[str], None],
        on_run_queued: Callable[[str], None] | None = None,
    ) -> None:
        """``database_url``: the PostgreSQL URL, or None (SQLite: nothing to listen to). Told
        with the deadline of every consent any process stored, the id of every run a client
        asked to cancel, and (a worker replica) the id of every run queued for the workers."""
        self._dsn = libpq_url(database_url) if database_url else None
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._approval_waiters: dict[str, set[asyncio.Event]] = {}
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._on_consent_requested = on_consent_requested
        self._on_cancel_requested = on_cancel_requested
        self._on_run_queued = on_run_queued or (lambda run_id: None)

    @property
    def enabled(self) -> bool:
        return self._dsn is not None

    async def start(self) -> None:
        """Start listening; returns once ``LISTEN`` is in place."""
        if self._dsn is None or self._task is not None:
            return
        self._task = asyncio.create_task(self._listen(self._dsn), name="event-notifications")
        async with asyncio.timeout(30):
            await self._listening.wait()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    @contextlib.contextmanager
    def watch(self, thread_id: str) -> Iterator[asyncio.Event]:
        """An event set whenever the thread gets new stored events (clear it before reading)."""
        waiter = asyncio.Event()
        self._waiters.setdefault(thread_id, set()).add(waiter)
        try:
            yield waiter
        finally:
            waiters = self._waiters.get(thread_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiters[thread_id]

    @contextlib.contextmanager
    def watch_approvals(self, owner: str) -> Iterator[asyncio.Event]:
        """An event set whenever one of ``owner``'s approvals changes (``tenant/user``), or the
        notifications were interrupted (clear it before reading)."""
        waiter = asyncio.Event()
        self._approval_waiters.setdefault(owner, set()).add(waiter)
        try:
            yield waiter
        finally:
            waiters = self._approval_waiters.get(owner)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._approval_waiters[owner]

    def deliver(self, channel: str, payload: str) -> None:
        """A notification this process made, delivered after its commit (SQLite)."""
        self._dispatch(channel, payload)

    def _wake(self, thread_id: str | None) -> None:
        groups: Any = (
            self._waiters.values() if thread_id is None else [self._waiters.get(thread_id, ())]
        )
        for waiters in groups:
            for waiter in waiters:
                waiter.set()
        if thread_id is None:  # the listener was away: the approvals feeds read again too
            for waiters in self._approval_waiters.values():
                for waiter in waiters:
                    waiter.set()

    def _dispatch(self, channel: str, payload: str) -> None:
        if channel == EVENTS_CHANNEL:
            self._wake(payload)
        elif channel == CONSENTS_CHANNEL:
            self._on_consent_requested(datetime.fromtimestamp(float(payload), UTC))
        elif channel == RUNS_CHANNEL:
            self._on_run_queued(payload)
        elif channel == CANCELS_CHANNEL:
            self._on_cancel_requested(payload)
        elif channel == APPROVALS_CHANNEL:
            for waiter in self._approval_waiters.get(payload, ()):
                waiter.set()

    async def _listen(self, dsn: str) -> None:
        from psycopg import AsyncConnection

        while True:
            try:
                async with await AsyncConnection.connect(dsn, autocommit=True) as conn:
                    for channel in (
                        EVENTS_CHANNEL,
                        CONSENTS_CHANNEL,
                        RUNS_CHANNEL,
                        CANCELS_CHANNEL,
                        APPROVALS_CHANNEL,
                    ):
                        await conn.execute(f"LISTEN {channel}")
                    self._listening.set()
                    self._wake(None)  # whatever happened while not listening
                    self._on_run_queued("")
                    async for notify in conn.notifies():
                        self._dispatch(notify.channel, notify.payload)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("lost the event notification connection; reconnecting")
            self._wake(None)
            await asyncio.sleep(RECONNECT_SECONDS)
