"""PostgreSQL's connections: a small pool of psycopg connections, each transaction a
:class:`~consentry.storage.db.postgres_connection.PostgresConnection`.

- **Opened as the load needs them**, up to ``max_size``, and kept: connections opened and closed
  under load cost more than the conversations they served (at 100 concurrent conversations, 3.2
  new connections a conversation and half again the CPU).
- **Last in, first out**: the connection given back last is taken first, so under a light load
  one connection serves, and it is never idle long enough to need a check (``idle_checks``).
- **Connecting where it is asked for**: when the database refuses connections (it is down or
  restarting), the request that needed one fails at once (``is_database_unavailable``: 503
  ``database_unavailable``), rather than waiting while a background task retries (psycopg's own
  pool does that: every request of an outage then waited its full timeout before its 503). A
  host that does not answer at all fails it within the time the transaction may wait.
- **A wait with a limit, first come first served**: a connection given back goes to the
  transaction that waited longest; one that waits ``timeout`` seconds, all of them busy, fails
  with :class:`PoolExhaustedError` (an outage: a 503, a retryable run), as does one that comes
  while the server stops (:class:`PoolClosedError`).
- **Ends that complete**: a transaction's end (its commit or rollback, and the connection's
  return) runs to completion even when the caller is cancelled meanwhile; the cancellation is
  raised after. A connection that is broken, or not idle after its end, is closed, not kept.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Awaitable
from contextlib import suppress
from typing import Any, TypeVar

import psycopg
from sqlalchemy.engine import Dialect

from consentry.storage.db import idle_checks
from consentry.storage.db.direct import AnsweringCursor
from consentry.storage.db.postgres_connection import PostgresConnection

__all__ = ["PoolClosedError", "PoolExhaustedError", "PostgresPool"]

T = TypeVar("T")
_Driver = psycopg.AsyncConnection[Any]


class PoolExhaustedError(Exception):
    """Every connection of the pool stayed busy for as long as a transaction may wait."""


class PoolClosedError(PoolExhaustedError):
    """The server is stopping: its database connections are closed (an outage to a request)."""


_Handed = tuple[_Driver, float] | None
"""What a waiter is handed: a connection given back (and when), or None: a connection was
closed, so one may be opened in its place."""


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
        self._waiting: deque[asyncio.Future[_Handed]] = deque()
        """Transactions waiting for a connection, first come first served."""
        self._closed = False

    @property
    def sizes(self) -> tuple[int, int]:
        """Connections open, and of those idle."""
        return self._opened, len(self._idle)

    def transaction(self, *, read: bool = False) -> _Transaction:
        """A transaction, committed when the block ends, rolled back if it raises."""
        return _Transaction(self, read)

    async def close(self) -> None:
        """Close the idle connections (those in a transaction are closed when it ends) and
        refuse what waits or comes: :class:`PoolClosedError`."""
        self._closed = True
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)  # it finds the pool closed
        idle, self._idle = self._idle, []
        for driver, _ in idle:
            self._opened -= 1
            with suppress(psycopg.Error, OSError):
                await driver.close()

    async def _take(self) -> _Driver:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        handed: _Handed = None
        while True:
            if self._closed:
                if handed is not None:
                    await self._discard(handed[0])
                raise PoolClosedError("the server is stopping: its database connections are closed")
            if handed is None and self._idle and not self._waiting:
                handed = self._idle.pop()
            if handed is not None:
                driver, returned = handed
                handed = None
                if await self._answers(driver, returned, deadline - loop.time()):
                    return driver
                continue  # closed: another, or a new one
            if self._opened < self._max_size:
                return await self._connect(deadline - loop.time())
            handed = await self._wait(deadline - loop.time())

    async def _connect(self, remaining: float) -> _Driver:
        self._opened += 1
        try:
            return await psycopg.AsyncConnection.connect(
                self._url,
                autocommit=True,  # the BEGIN is ours, deferred (``postgres_connection``)
                prepare_threshold=None,
                cursor_factory=AnsweringCursor,
                connect_timeout=max(1, math.ceil(remaining)),  # libpq's: whole seconds
            )
        except BaseException:
            self._opened -= 1
            self._hand_over(None)  # a connection may be opened in its place
            raise

    async def _answers(self, driver: _Driver, returned: float, remaining: float) -> bool:
        """Whether a connection taken from the idle ones may serve: one idle for a while is
        checked first (``idle_checks``); one that fails, or does not answer in the time left, is
        closed and replaced. A caller cancelled meanwhile closes it too: never lost."""
        if driver.closed:
            await _to_completion(self._discard(driver))
            return False
        if time.monotonic() - returned < idle_checks.IDLE_CHECK_SECONDS:
            return True
        try:
            async with asyncio.timeout(max(remaining, 0.001)):
                await idle_checks.check(driver)
        except Exception:  # a dead connection: replaced, the caller never sees it
            await _to_completion(self._discard(driver))
            return False
        except BaseException:
            await _to_completion(self._discard(driver))
            raise
        return True

    async def _wait(self, remaining: float) -> _Handed:
        if remaining <= 0:
            raise PoolExhaustedError(f"no database connection came free in {self._timeout} s")
        waiter: asyncio.Future[_Handed] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            async with asyncio.timeout(remaining):
                return await waiter
        except BaseException as stopped:
            if waiter.done() and not waiter.cancelled():
                self._hand_over(waiter.result())  # handed as it stopped waiting: to the next
            else:
                waiter.cancel()  # skipped by ``_hand_over``
            if isinstance(stopped, TimeoutError):
                raise PoolExhaustedError(
                    f"no database connection came free in {self._timeout} s"
                ) from None
            raise

    def _hand_over(self, handed: _Handed) -> None:
        """Give a connection back (or the room to open one) to the first waiter, if any."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(handed)
                return
        if handed is not None:
            self._idle.append(handed)

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
            driver = conn.driver
            idle = psycopg.pq.TransactionStatus.IDLE
            if self._closed or driver.closed or driver.info.transaction_status != idle:
                await self._discard(driver)
            else:
                self._hand_over((driver, time.monotonic()))

    async def _discard(self, driver: _Driver) -> None:
        self._opened -= 1
        self._hand_over(None)  # a connection may be opened in its place
        with suppress(psycopg.Error, OSError):
            await driver.close()


class _Transaction:
    """:meth:`PostgresPool.transaction`'s block (a class, not a generator: a transaction's every
    layer costs)."""

    __slots__ = ("_conn", "_pool", "_read")

    def __init__(self, pool: PostgresPool, read: bool) -> None:
        self._pool = pool
        self._read = read
        self._conn: PostgresConnection | None = None

    async def __aenter__(self) -> PostgresConnection:
        driver = await self._pool._take()
        self._conn = PostgresConnection(driver, self._pool.dialect, read=self._read)
        return self._conn

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _tb: Any
    ) -> None:
        conn, pool = self._conn, self._pool
        assert conn is not None
        if kind is not None:
            await _to_completion(pool._end(conn, commit=False))
        elif conn.ends_unsent:
            # Nothing to send (a read, a transaction committed with its last statement): its
            # end never waits, so no cancellation can come in the middle of it, and it runs here
            # rather than in a task of its own (two more turns of the event loop).
            await pool._end(conn, commit=True)
        else:
            await _to_completion(pool._end(conn, commit=True))


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
