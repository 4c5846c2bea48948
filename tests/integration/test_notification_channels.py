"""``EventNotifications`` on PostgreSQL listens to ``consentry_events`` and
``consentry_approvals`` only while something in the process watches them: a process following
no run executing elsewhere is not sent every step of its own runs. A watch returns once its
channel is listened to (a notification right after it wakes the watcher), a channel nobody
watches any more is left when its next notification arrives, and a lost connection wakes every
watcher and listens again to what is still watched.

A notification on an always-listened channel (``consentry_consents``) is the barrier: one
connection gets its notifications in commit order, so once the barrier was dispatched, every
notification sent before it was either dispatched or never sent to this process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import psycopg
import pytest

from consentry.runtime.replicas import _notifications as notifications_module
from consentry.runtime.replicas._notifications import (
    APPROVALS_CHANNEL,
    CONSENTS_CHANNEL,
    EVENTS_CHANNEL,
    EventNotifications,
)
from tests.postgres import PostgresCluster

WAIT_SECONDS = 10.0
BARRIER = "0"


class _Recording(EventNotifications):
    """Records each notification it is sent, by channel and payload."""

    def __init__(self, url: str) -> None:
        self.barriers = asyncio.Queue[None]()
        self.connections = asyncio.Queue[None]()
        super().__init__(
            url,
            on_consent_requested=self._barrier,
            on_cancel_requested=print,
            on_run_queued=self._connected,
        )
        self.sent: list[tuple[str, str]] = []
        self.left = asyncio.Event()
        """Set each time the listener sent an ``UNLISTEN``."""

    def _connected(self, run_id: str) -> None:
        """A worker is told ``""`` each time the listener (re)connected: look at the queue."""
        if not run_id:
            self.connections.put_nowait(None)

    def _barrier(self, _deadline: datetime) -> None:
        self.barriers.put_nowait(None)

    async def _command(self, conn: Any, sql: str) -> None:
        await super()._command(conn, sql)
        if sql.startswith("UNLISTEN"):
            self.left.set()

    def _dispatch(self, channel: str, payload: str) -> None:
        if channel != CONSENTS_CHANNEL:
            self.sent.append((channel, payload))
        super()._dispatch(channel, payload)


@asynccontextmanager
async def _listening(url: str) -> AsyncIterator[tuple[_Recording, Callable[..., object]]]:
    listener = _Recording(url)
    await listener.start()
    await listener.connections.get()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as other:

        async def notify(channel: str, payload: str) -> None:
            await other.execute("SELECT pg_notify(%s, %s)", (channel, payload))

        async def sent_after(*notified: tuple[str, str]) -> list[tuple[str, str]]:
            """Send ``notified``, then the barrier; what of them this process was sent."""
            listener.sent.clear()
            for channel, payload in notified:
                await notify(channel, payload)
            await notify(CONSENTS_CHANNEL, BARRIER)
            async with asyncio.timeout(WAIT_SECONDS):
                await listener.barriers.get()
            return list(listener.sent)

        try:
            yield listener, sent_after
        finally:
            await listener.stop()


async def test_a_process_that_watches_nothing_is_sent_no_events_and_no_approval_changes(
    postgres: PostgresCluster,
) -> None:
    async with _listening(postgres.new_database()) as (_listener, sent_after):
        sent = await sent_after((EVENTS_CHANNEL, "thread-1"), (APPROVALS_CHANNEL, "t/u"))
    assert sent == []


async def test_a_watch_is_woken_by_the_first_notification_after_it_and_left_once_unwatched(
    postgres: PostgresCluster,
) -> None:
    async with _listening(postgres.new_database()) as (listener, sent_after):
        async with listener.watch("thread-1") as woken:
            # No wait in between: the watch returned once its channel was listened to.
            assert await sent_after((EVENTS_CHANNEL, "thread-1")) == [(EVENTS_CHANNEL, "thread-1")]
            assert woken.is_set()
        # Unwatched: the next one still arrives, and the channel is left.
        assert await sent_after((EVENTS_CHANNEL, "thread-2")) == [(EVENTS_CHANNEL, "thread-2")]
        async with asyncio.timeout(WAIT_SECONDS):
            await listener.left.wait()
        assert await sent_after((EVENTS_CHANNEL, "thread-3")) == []
        async with listener.watch("thread-4") as woken:  # and listened to again
            assert await sent_after((EVENTS_CHANNEL, "thread-4")) == [(EVENTS_CHANNEL, "thread-4")]
            assert woken.is_set()


async def test_an_approvals_watch_is_woken_by_its_owners_changes_only(
    postgres: PostgresCluster,
) -> None:
    url = postgres.new_database()
    async with _listening(url) as (listener, sent_after), listener.watch_approvals("t/a") as woken:
        await sent_after((APPROVALS_CHANNEL, "t/b"))
        assert not woken.is_set()
        sent = await sent_after((APPROVALS_CHANNEL, "t/a"), (EVENTS_CHANNEL, "thread-1"))
        assert sent == [(APPROVALS_CHANNEL, "t/a")]  # events: nobody watches them
        assert woken.is_set()


async def test_a_lost_connection_wakes_the_watchers_and_listens_again_to_what_they_watch(
    postgres: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(notifications_module, "RECONNECT_SECONDS", 0.05)
    url = postgres.new_database()
    async with _listening(url) as (listener, sent_after), listener.watch("thread-1") as woken:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND query LIKE 'LISTEN %'"
            )
        async with asyncio.timeout(WAIT_SECONDS):
            await woken.wait()  # told to read again: something may have been missed
            await listener.connections.get()  # connected again
        woken.clear()
        assert await sent_after((EVENTS_CHANNEL, "thread-1")) == [(EVENTS_CHANNEL, "thread-1")]
        assert woken.is_set()


class _SlowToLeave(_Recording):
    """Its ``UNLISTEN`` waits until the test lets it go."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.leaving = asyncio.Event()
        self.let_go = asyncio.Event()

    async def _command(self, conn: Any, sql: str) -> None:
        if sql.startswith("UNLISTEN"):
            self.leaving.set()
            await self.let_go.wait()
        await super()._command(conn, sql)


async def test_a_watch_that_starts_while_its_channel_is_being_left_is_listened_to(
    postgres: PostgresCluster,
) -> None:
    """The channel is left (its last watcher gone, a notification arrived) and, while the
    ``UNLISTEN`` is on its way, a new watch starts: it returns only once the channel is
    listened to again, and is woken by what follows (it was never woken when the channel
    counted as listened to until its ``UNLISTEN`` came back)."""
    url = postgres.new_database()
    listener = _SlowToLeave(url)
    await listener.start()
    woken = asyncio.Event()

    async def watch_thread_2(entered: asyncio.Event) -> None:
        async with listener.watch("thread-2") as waiter:
            entered.set()
            await waiter.wait()
            woken.set()

    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as other:
            async with listener.watch("thread-1"):
                pass
            await other.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, "thread-1"))
            async with asyncio.timeout(WAIT_SECONDS):
                await listener.leaving.wait()  # the UNLISTEN is on its way
            entered = asyncio.Event()
            watching = asyncio.ensure_future(watch_thread_2(entered))
            await asyncio.sleep(0)  # the watch starts (and waits, or wrongly returns)
            listener.let_go.set()
            async with asyncio.timeout(WAIT_SECONDS):
                await entered.wait()
            await other.execute("SELECT pg_notify(%s, %s)", (EVENTS_CHANNEL, "thread-2"))
            async with asyncio.timeout(WAIT_SECONDS):
                await woken.wait()
            await watching
    finally:
        await listener.stop()
