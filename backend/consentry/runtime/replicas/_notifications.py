"""What other processes did, told by PostgreSQL notifications (triggers of migration 0007).

- ``consentry_events`` (payload: a thread id): new stored events. The streams following a run
  that executes in another process are woken and read them from the table.
- ``consentry_consents`` (payload: a deadline, epoch seconds): a consent was asked somewhere; the
  expiry sweeper re-plans if it expires before its planned wake-up.
- ``consentry_runs`` (payload: a run id): an API-only replica queued a run; workers take it.
- ``consentry_cancels`` (payload: a run id, then `` rollback`` when it is to be rolled back): a
  client asked any replica to cancel a run; the process executing it stops it at its next step
  boundary. (A replica of a release before rollbacks drops a rollback's cancel: upgrade them all
  before rollbacks are asked.)
- ``consentry_approvals`` (payload: an owner, ``tenant/user``): one of the owner's approvals
  was requested, decided, expired or cancelled; the owner's approvals feeds read the change
  (``runtime.approval_feed``). Sent by ``storage.db.database.notify_at_commit``, which on SQLite
  delivers to this process right after the commit (:meth:`EventNotifications.deliver`).
- ``consentry_webhooks`` (payload: a delivery id): a run's end queued a webhook post; the
  senders look for what is due (``runtime.webhooks``). Sent by ``notify_at_commit`` too.

- ``consentry_crons`` (no payload): a cron was created, changed or deleted; the cron scheduler
  plans its next wake-up again (``runtime.crons``, :meth:`EventNotifications.watch_crons`).

Each process keeps one ``LISTEN`` connection. If it drops, every waiter is woken (so none misses
what happened meanwhile) and the listener reconnects. On SQLite one process serves the file and
streams follow their runs in memory: the listener does nothing.

``consentry_events`` and ``consentry_approvals`` are listened to only while something in this
process watches them (``EventNotifications.watch``, ``watch_approvals``): every step of every run
notifies ``consentry_events``, and a process that follows no run executing elsewhere would
otherwise receive, parse and drop them all (measured: 5% of a loaded replica's CPU). A watch
returns once its channel is listened to, so a read after it misses nothing. A channel nobody
watches any more is left (``UNLISTEN``) when its next notification arrives, so that watchers
coming and going do not make the listener's connection go back and forth.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from consentry.runtime.background import BackgroundLoop
from consentry.storage.audit import APPROVALS_CHANNEL
from consentry.storage.crons import CRONS_CHANNEL
from consentry.storage.db.database import libpq_url
from consentry.storage.runs import CANCELS_CHANNEL, RUNS_CHANNEL
from consentry.storage.webhooks import WEBHOOKS_CHANNEL

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "APPROVALS_CHANNEL",
    "CANCELS_CHANNEL",
    "CONSENTS_CHANNEL",
    "CRONS_CHANNEL",
    "EVENTS_CHANNEL",
    "RUNS_CHANNEL",
    "WEBHOOKS_CHANNEL",
    "EventNotifications",
]

log = logging.getLogger(__name__)
EVENTS_CHANNEL = "consentry_events"
CONSENTS_CHANNEL = "consentry_consents"
RECONNECT_SECONDS = 1.0
LISTEN_WAIT_SECONDS = 5.0
"""How long a watch waits for its channel's ``LISTEN`` before it goes on without it."""


_WATCHED = (EVENTS_CHANNEL, APPROVALS_CHANNEL)
"""Listened to while something watches them; the others always."""


class EventNotifications(BackgroundLoop):
    def __init__(
        self,
        database_url: str | None,
        *,
        on_consent_requested: Callable[[datetime], None],
        on_cancel_requested: Callable[[str], None],
        on_run_queued: Callable[[str], None] | None = None,
        on_webhook_queued: Callable[[str], None] | None = None,
    ) -> None:
        """``database_url``: the PostgreSQL URL, or None (SQLite: nothing to listen to). Told
        with the deadline of every consent any process stored, the id of every run a client
        asked to cancel, (a worker replica, given ``on_run_queued``) the id of every run
        queued for the workers, and (given ``on_webhook_queued``) the id of every webhook
        delivery a run's end queued."""
        self._dsn = libpq_url(database_url) if database_url else None
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._approval_waiters: dict[str, set[asyncio.Event]] = {}
        self._cron_waiters: set[asyncio.Event] = set()
        self._task: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self._on_consent_requested = on_consent_requested
        self._on_cancel_requested = on_cancel_requested
        self._on_run_queued = on_run_queued or (lambda run_id: None)
        self._on_webhook_queued = on_webhook_queued or (lambda delivery_id: None)
        self._always = (
            (CONSENTS_CHANNEL, CANCELS_CHANNEL, CRONS_CHANNEL)
            + ((RUNS_CHANNEL,) if on_run_queued is not None else ())
            + ((WEBHOOKS_CHANNEL,) if on_webhook_queued is not None else ())
        )
        self._connected = False
        self._listened: set[str] = set()
        """The watched channels the connection listens to now."""
        self._asked: dict[str, asyncio.Future[None]] = {}
        """Watched channels to listen to, each with its watchers' wait."""
        self._resync = asyncio.Event()
        """Set when the watched channels listened to should change."""

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

    @contextlib.asynccontextmanager
    async def watch(self, thread_id: str) -> AsyncIterator[asyncio.Event]:
        """An event set whenever the thread gets new stored events (clear it before reading),
        given once new events are notified."""
        waiter = asyncio.Event()
        with _registered(self._waiters, thread_id, waiter):
            await self._listen_to(EVENTS_CHANNEL)
            yield waiter

    @contextlib.asynccontextmanager
    async def watch_approvals(self, owner: str) -> AsyncIterator[asyncio.Event]:
        """An event set whenever one of ``owner``'s approvals changes (``tenant/user``), or the
        notifications were interrupted (clear it before reading), given once changes are
        notified."""
        waiter = asyncio.Event()
        with _registered(self._approval_waiters, owner, waiter):
            await self._listen_to(APPROVALS_CHANNEL)
            yield waiter

    @contextlib.asynccontextmanager
    async def watch_crons(self) -> AsyncIterator[asyncio.Event]:
        """An event set whenever a cron is created, changed or deleted in any process, or the
        notifications were interrupted (clear it before reading)."""
        waiter = asyncio.Event()
        self._cron_waiters.add(waiter)
        try:
            yield waiter
        finally:
            self._cron_waiters.discard(waiter)

    def deliver(self, channel: str, payload: str) -> None:
        """A notification this process made, delivered after its commit (SQLite)."""
        self._dispatch(channel, payload)

    async def _listen_to(self, channel: str) -> None:
        """Return once ``channel`` is listened to, or at once when there is no connection
        (its reconnection listens to every watched channel, then wakes every waiter). A
        connection that does not answer within :data:`LISTEN_WAIT_SECONDS` (half-open) is not
        waited for longer: the watcher reads, and its own re-reads or the reconnection's
        wake-up follow."""
        if not self._connected or channel in self._listened:
            return
        asked = self._asked.get(channel)
        if asked is None:
            asked = self._asked[channel] = asyncio.get_running_loop().create_future()
            self._resync.set()
        try:
            async with asyncio.timeout(LISTEN_WAIT_SECONDS):
                await asyncio.shield(asked)
        except TimeoutError:
            log.warning(
                "the notification connection did not LISTEN in time", extra={"channel": channel}
            )

    def _watched(self, channel: str) -> bool:
        return bool(self._waiters if channel == EVENTS_CHANNEL else self._approval_waiters)

    def _wake(self, thread_id: str | None) -> None:
        groups: Any = (
            self._waiters.values() if thread_id is None else [self._waiters.get(thread_id, ())]
        )
        for waiters in groups:
            for waiter in waiters:
                waiter.set()
        if thread_id is None:  # the listener was away: the approvals feeds read again too
            for waiters in [*self._approval_waiters.values(), self._cron_waiters]:
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
        elif channel == CRONS_CHANNEL:
            for waiter in self._cron_waiters:
                waiter.set()
        elif channel == WEBHOOKS_CHANNEL:
            self._on_webhook_queued(payload)
        elif channel == APPROVALS_CHANNEL:
            for waiter in self._approval_waiters.get(payload, ()):
                waiter.set()
        if channel in self._listened and not self._watched(channel):
            self._resync.set()  # nobody watches it any more: leave it

    async def _listen(self, dsn: str) -> None:
        from psycopg import AsyncConnection

        while True:
            try:
                async with await AsyncConnection.connect(dsn, autocommit=True) as conn:
                    for channel in self._always:
                        await self._command(conn, f"LISTEN {channel}")
                    self._connected = True  # a watch from now on asks for its channel
                    await self._sync_watched(conn)
                    self._listening.set()
                    self._wake(None)  # whatever happened while not listening
                    self._on_run_queued("")
                    self._on_webhook_queued("")  # (one queued while it was away)
                    while True:
                        await self._receive_until_resync(conn)
                        await self._sync_watched(conn)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("lost the event notification connection; reconnecting")
            finally:
                self._disconnected()
            self._wake(None)
            await asyncio.sleep(RECONNECT_SECONDS)

    async def _receive_until_resync(self, conn: AsyncConnection[Any]) -> None:
        """Dispatch notifications until the watched channels should change."""

        async def receive() -> None:
            async for notify in conn.notifies():
                self._dispatch(notify.channel, notify.payload)

        receiving = asyncio.ensure_future(receive())
        resync = asyncio.ensure_future(self._resync.wait())
        try:
            await asyncio.wait((receiving, resync), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (receiving, resync):
                task.cancel()
            await asyncio.wait((receiving, resync))
        if not receiving.cancelled() and receiving.exception() is not None:
            raise cast(BaseException, receiving.exception())  # the connection failed

    async def _sync_watched(self, conn: AsyncConnection[Any]) -> None:
        """Listen to the watched channels somebody watches or asked for, leave the others. A
        channel is left before its ``UNLISTEN`` is sent: a watch that comes meanwhile asks for
        it again (and the loop syncs once more) rather than take it as listened to."""
        self._resync.clear()  # what is asked from now on is synced next time
        for channel in _WATCHED:
            wanted = self._watched(channel) or channel in self._asked
            if wanted and channel not in self._listened:
                await self._command(conn, f"LISTEN {channel}")
                self._listened.add(channel)
            elif not wanted and channel in self._listened:
                self._listened.discard(channel)
                await self._command(conn, f"UNLISTEN {channel}")
        self._answer_asked(self._listened)
        if any(
            (self._watched(channel) or channel in self._asked) and channel not in self._listened
            for channel in _WATCHED
        ):
            self._resync.set()  # watched while this ran: sync again

    async def _command(self, conn: AsyncConnection[Any], sql: str) -> None:
        await conn.execute(sql)

    def _disconnected(self) -> None:
        self._connected = False
        self._listened.clear()
        self._answer_asked(_WATCHED)  # their reads are followed by the reconnection's wake-up

    def _answer_asked(self, channels: Iterable[str]) -> None:
        for channel in channels:
            asked = self._asked.pop(channel, None)
            if asked is not None and not asked.done():
                asked.set_result(None)


@contextlib.contextmanager
def _registered(
    waiters: dict[str, set[asyncio.Event]], key: str, waiter: asyncio.Event
) -> Iterator[None]:
    waiters.setdefault(key, set()).add(waiter)
    try:
        yield
    finally:
        group = waiters.get(key)
        if group is not None:
            group.discard(waiter)
            if not group:
                del waiters[key]
