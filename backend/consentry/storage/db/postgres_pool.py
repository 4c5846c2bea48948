"""PostgreSQL's connections: a small pool of psycopg connections, each transaction a
:class:`~consentry.storage.db.postgres_connection.PostgresConnection`.

- **Opened as the load needs them**, up to ``max_size``, and kept: connections opened and closed
  under load cost more than the conversations they served (at 100 concurrent conversations, 3.2
  new connections a conversation and half again the CPU).
- **Last in, first out**: the connection given back last is taken first, so under a light load
  one connection serves, and it is never idle long enough to need a check (``idle_checks``).
- **Connecting where it is asked for**: when the database cannot be reached, the request that
  needed a connection fails at once (``is_database_unavailable``: 503 ``database_unavailable``),
  rather than waiting while a background task retries (psycopg's own pool does that: every
  request of an outage then waited its full timeout before its 503).
- **A wait with a limit**: a transaction that waits ``timeout`` seconds for a connection, all of
  them busy, fails with :class:`PoolExhaustedError` (also an outage: a 503, a retryable run).
- **Ends that complete**: a transaction's end (its commit or rollback, and the connection's
  return) runs to completion even when the caller is cancelled meanwhile; the cancellation is
  raised after. A connection that is broken, or not idle after its end, is closed, not kept.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager, suppress
from typing import Any, TypeVar

import psycopg
from sqlalchemy.engine import Dialect

from consentry.storage.db import idle_checks
from consentry.storage.db.direct import AnsweringCursor
from consentry.storage.db.postgres_connection import PostgresConnection

__all__ = ["PoolExhaustedError", "PostgresPool"]

T = TypeVar("T")
_Driver = psycopg.AsyncConnection[Any]


class PoolExhaustedError(Exception):
    """Every connection of the pool stayed busy for as long as a transaction may wait."""


class PostgresPool:
    """Connections to one database, handed out one transaction at a time (see the module)."""

    def __init__(self, url: str, dialect: Dialect, *, max_size: int, timeout: float) -> None:
        self.dialect = dialect
        self._url = url
        self._max_size = max_size
        self._timeout = timeout
        self._idle: list[tuple[_Driver, float]] = []
        """Connections given back, with when: the last one is taken first."""
        self._opened = 0
        """Connections open or being opened (idle or in a transaction)."""
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._closed = False

    @property
    def sizes(self) -> tuple[int, int]:
        """Connections open, and of those idle."""
        return self._opened, len(self._idle)

    @asynccontextmanager
    async def transaction(self, *, read: bool = False) -> AsyncIterator[PostgresConnection]:
        """A transaction, committed when the block ends, rolled back if it raises."""
        driver = await self._take()
        conn = PostgresConnection(driver, self.dialect, read=read)
        try:
            yield conn
        except BaseException:
            await _to_completion(self._end(conn, commit=False))
            raise
        await _to_completion(self._end(conn, commit=True))

    async def close(self) -> None:
        """Close the idle connections; those in a transaction are closed when it ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for driver, _ in idle:
            self._opened -= 1
            with suppress(psycopg.Error, OSError):
                await driver.close()

    async def _take(self) -> _Driver:
        if self._closed:
            raise RuntimeError("the database is closed")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        while True:
            if self._idle:
                driver, returned = self._idle.pop()
                if await self._answers(driver, returned):
                    return driver
                continue  # closed: another, or a new one
            if self._opened < self._max_size:
                self._opened += 1
                try:
                    return await psycopg.AsyncConnection.connect(
                        self._url,
                        autocommit=True,  # the BEGIN is ours, deferred (``postgres_connection``)
                        prepare_threshold=None,
                        cursor_factory=AnsweringCursor,
                    )
                except BaseException:
                    self._opened -= 1
                    self._wake_one()
                    raise
            await self._wait(deadline - loop.time())

    async def _answers(self, driver: _Driver, returned: float) -> bool:
        """Whether a connection taken from the idle ones may serve: one idle for a while is
        checked first (``idle_checks``); one that fails is closed and replaced."""
        if time.monotonic() - returned < idle_checks.IDLE_CHECK_SECONDS and not driver.closed:
            return True
        try:
            if not driver.closed:
                await idle_checks.check(driver)
                return True
        except Exception:
            pass
        await self._discard(driver)
        return False

    async def _wait(self, remaining: float) -> None:
        if remaining <= 0:
            raise PoolExhaustedError(f"no database connection came free in {self._timeout} s")
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)  # one stopped waiting stays, done, until skipped
        try:
            async with asyncio.timeout(remaining):
                await waiter
        except BaseException as stopped:
            if waiter.done() and not waiter.cancelled():
                self._wake_one()  # woken as it stopped waiting: the next one is
            if isinstance(stopped, TimeoutError):
                raise PoolExhaustedError(
                    f"no database connection came free in {self._timeout} s"
                ) from None
            raise

    def _wake_one(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def _end(self, conn: PostgresConnection, *, commit: bool) -> None:
        try:
            if commit:
                try:
                    await conn.commit()
                except BaseException:
                    await _quietly(conn.rollback())
                    raise
            else:
                await _quietly(conn.rollback())
        finally:
            await self._give_back(conn.driver)

    async def _give_back(self, driver: _Driver) -> None:
        idle = psycopg.pq.TransactionStatus.IDLE
        if self._closed or driver.closed or driver.info.transaction_status != idle:
            await self._discard(driver)
            return
        self._idle.append((driver, time.monotonic()))
        self._wake_one()

    async def _discard(self, driver: _Driver) -> None:
        self._opened -= 1
        self._wake_one()  # a connection may be opened in its place
        with suppress(psycopg.Error, OSError):
            await driver.close()


async def _quietly(ending: Awaitable[None]) -> None:
    """A rollback after a failure: one that fails too (a connection the database dropped)
    leaves the first failure to be raised; the connection is then closed, not kept."""
    with suppress(psycopg.Error, OSError):
        await ending


async def _to_completion(ending: Awaitable[T]) -> T:
    """Await ``ending`` to its end even if the caller is cancelled meanwhile. The cancellation is
    raised after it, also when the end failed (that failure is then its cause), so that a task
    asked to stop does stop."""
    task = asyncio.ensure_future(ending)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as error:
            cancelled = error  # the caller's (the loop goes on) or the task's own (it is done)
        except BaseException:  # the end's own failure: raised below, by task.result()
            pass
    if cancelled is not None:
        failure = None if task.cancelled() else task.exception()
        raise cancelled from failure
    return task.result()
