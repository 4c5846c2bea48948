"""SQLite connections whose transactions run on the event loop's thread.

SQLite runs in the process: in WAL mode, with ``synchronous=NORMAL``, a statement of the server's
hot path is tens of microseconds of CPU and a commit does not wait for the disk. Handing each one
to another thread cost more than the statement itself (a wake-up of that thread and of the loop,
and the GIL changing hands twice: measured, about a seventh of the server's CPU a
conversation), so a transaction runs where it is awaited, on the loop's thread.

Each connection still has its own thread (:class:`SqliteWorker`, on a ``SqliteThread``), for
what must not hold the loop up:

- a transaction opened with ``offload=True`` (``Database.read`` / ``write``): the migrations, the
  retention sweeps, the copy of a legacy checkpoint database: long statements whose rows nobody
  waits for; each of its calls is one hop to the thread and back, every row fetched there;
- the writer's wait for SQLite's write lock when another process holds it (a ``sqlite3`` shell,
  a backup tool: Consentry serves a file from one process): the writer's connection has no busy
  timeout of its own, so ``BEGIN IMMEDIATE`` fails at once rather than stop the loop, and the
  transaction goes to the thread, which waits the busy timeout there and runs the transaction.

:class:`SqliteConnection` is the transaction handed out by ``Database.read()`` and
``Database.write()`` on SQLite. It speaks the part of SQLAlchemy's ``AsyncConnection`` that the
storage modules use (``execute``, ``scalar``, ``exec_driver_sql``, ``run_sync``, ``dialect``), so
they run unchanged on both databases. Its transaction begins with its first statement. A failed
or cancelled one is rolled back before the connection serves anyone else: at once on the loop,
or on the thread after what runs there (and the next transaction of that connection waits for it).

A statement whose result nobody reads (an audit record, say) can wait for the transaction's next
call: ``defer`` keeps it, and that call runs it first, before its own statement or the commit. It
fails there, inside the same transaction, so the transaction still commits all or nothing
(``database.execute_unread`` is how storage modules use it). Its parameters are read when it runs:
give it values nobody changes afterwards.

A connection serves one transaction at a time: ``Database`` holds a lock (the writer) or takes
an idle reader from a queue around each transaction.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.engine.interfaces import _CoreAnyExecuteParams, _CoreSingleExecuteParams
from sqlalchemy.sql.base import Executable

from consentry.storage.db.direct import BufferedResult, run_direct
from consentry.storage.db.sqlite_thread import SqliteThread

__all__ = ["SqliteConnection", "SqliteWorker", "WriterBusyError"]

T = TypeVar("T")
P = ParamSpec("P")
_Deferred = tuple[Executable, "_CoreAnyExecuteParams | None"] | Callable[[Connection], object]
"""A statement (with its parameters) or a call that runs at the transaction's next hop."""


class SqliteWorker:
    """One SQLite connection, used on the loop's thread or on its own :class:`SqliteThread`."""

    def __init__(self, engine: Engine, *, name: str, write: bool, busy_timeout_ms: int) -> None:
        self.dialect: Dialect = engine.dialect
        self.thread = SqliteThread(name)
        self._engine = engine
        # A writer takes SQLite's write lock up front, so another process's writer waits on the
        # busy timeout instead of failing halfway through a read-then-write transaction.
        self._begin_sql = "BEGIN IMMEDIATE" if write else "BEGIN"
        self._write = write
        self._busy_timeout_ms = busy_timeout_ms
        self._waiting = False
        """On the thread, in :meth:`waiting_for_the_lock`: a busy ``BEGIN`` waited its timeout."""
        self._connection: Connection | None = None
        self._thread_done: asyncio.Future[None] | None = None
        """Set while a rollback runs on the thread: the connection's next transaction waits."""

    @property
    def connection(self) -> Connection:
        """The connection: use it in a call of a transaction (on the loop or on the thread)."""
        assert self._connection is not None, "the worker is not started"
        return self._connection

    async def start(self) -> None:
        self.thread.start()
        await self.thread.call(self._connect)

    def _connect(self) -> None:
        connection = self._engine.connect()
        driver = connection.connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        # On the driver: SQLAlchemy's execution would begin a transaction of its own, in which
        # the worker's first transaction would then run without its BEGIN.
        if self._write:
            # BEGIN IMMEDIATE on the loop must not wait: another process's lock sends the
            # transaction to the thread, which waits there (``in_transaction``).
            driver.execute("PRAGMA busy_timeout=0")
        else:
            # A read transaction never writes: on PostgreSQL its statements run without a
            # transaction of their own (a read sends no ``BEGIN``: ``postgres_connection``), so
            # a write there would not be atomic. Here it fails, in every test.
            driver.execute("PRAGMA query_only=ON")
        self._connection = connection

    async def ready(self) -> None:
        """Wait for a rollback still running on the thread (a cancelled offloaded transaction)."""
        if self._thread_done is not None:
            await asyncio.shield(self._thread_done)
            self._thread_done = None

    def in_transaction(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``fn(connection, ...)``, in the open transaction or a new one.

        The transaction's ``BEGIN`` is ours, not an event hook's: SQLAlchemy would leave its
        connection unable to begin again after a hook that failed (``database is locked``). On the
        writer it raises :class:`WriterBusyError` when another process holds the write lock."""
        connection = self.connection
        if not connection.in_transaction():
            connection.begin()
            try:
                connection.connection.driver_connection.execute(self._begin_sql)  # type: ignore[union-attr]
            except sqlite3.OperationalError as exc:
                connection.rollback()
                if (
                    self._write
                    and not self._waiting
                    and exc.sqlite_errorcode == sqlite3.SQLITE_BUSY
                ):
                    raise WriterBusyError from exc
                raise sa_exc.OperationalError(self._begin_sql, None, exc) from exc
            except BaseException:
                connection.rollback()
                raise
        return fn(connection, *args, **kwargs)

    def waiting_for_the_lock(self, run: Callable[[], T]) -> T:
        """On the thread: ``run()`` with the busy timeout, for a writer whose ``BEGIN
        IMMEDIATE`` found another process's lock."""
        driver = self.connection.connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        driver.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
        self._waiting = True
        try:
            return run()
        finally:
            self._waiting = False
            driver.execute("PRAGMA busy_timeout=0")

    def roll_back_on_the_thread(self) -> None:
        """Roll back after what runs on the thread; the next transaction waits for it."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._thread_done = done
        self.thread.post_then(self.connection.rollback, loop, done)

    async def stop(self) -> None:
        if self._connection is not None:
            self.thread.post(self._connection.close)
        await self.thread.stop()


class WriterBusyError(Exception):
    """The writer's ``BEGIN IMMEDIATE`` found the write lock held by another process."""


class SqliteConnection:
    """One transaction on a :class:`SqliteWorker`'s connection (see the module's docstring)."""

    def __init__(self, worker: SqliteWorker, *, offload: bool = False) -> None:
        self._worker = worker
        self.dialect = worker.dialect
        self._offload = offload
        self._used = False
        self._deferred: list[_Deferred] = []
        self.notices: list[tuple[str, str]] = []
        """Notifications to deliver in this process once the transaction commits
        (``database.notify_at_commit``)."""

    def defer(self, statement: Executable, parameters: _CoreAnyExecuteParams | None) -> None:
        """Run ``statement`` at the start of the transaction's next hop (see the module's
        docstring): its result is not read, and its failure is that hop's."""
        self._deferred.append((statement, parameters))

    def defer_call(self, fn: Callable[[Connection], object]) -> None:
        """Like :meth:`defer`, for ``fn(connection)`` (a driver-level write whose result is not
        read, the checkpointer's): it runs in order with the deferred statements."""
        self._deferred.append(fn)

    async def execute(
        self,
        statement: Executable,
        parameters: _CoreAnyExecuteParams | None = None,
        *,
        execution_options: dict[str, Any] | None = None,
    ) -> BufferedResult:
        return await self._call(_execute, statement, parameters, execution_options)

    async def scalar(
        self,
        statement: Executable,
        parameters: _CoreSingleExecuteParams | None = None,
        *,
        execution_options: dict[str, Any] | None = None,
    ) -> Any:
        result = await self.execute(statement, parameters, execution_options=execution_options)
        return result.scalar()

    async def exec_driver_sql(
        self, statement: str, parameters: _CoreAnyExecuteParams | None = None
    ) -> BufferedResult:
        return await self._call(_exec_driver_sql, statement, parameters)

    async def run_sync(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(connection, ...)`` inside this transaction (on the connection's thread if
        the transaction is offloaded)."""
        return await self._call(fn, *args, **kwargs)

    async def _call(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        worker, deferred = self._worker, self._deferred
        self._deferred, self._used = [], True

        def run() -> T:
            if deferred:
                worker.in_transaction(_execute_all, deferred)
            return worker.in_transaction(fn, *args, **kwargs)

        try:
            return await worker.thread.call(run) if self._offload else run()
        except WriterBusyError:  # another process's write lock: wait for it on the thread
            return await worker.thread.call(worker.waiting_for_the_lock, run)

    async def commit(self) -> None:
        """Commit, after the deferred statements (in the same hop)."""
        if self._deferred or self._used:
            await self._call(_commit)

    def end_without_waiting(self) -> None:
        """Roll back, ahead of any later transaction, without waiting for a call that still runs
        on the thread (a cancelled caller's). Deferred statements not run yet are dropped."""
        self._deferred.clear()
        if not self._used:
            return
        if self._offload or self._worker.thread.busy:
            self._worker.roll_back_on_the_thread()
        else:
            self._worker.connection.rollback()


def _execute(
    connection: Connection,
    statement: Executable,
    parameters: _CoreAnyExecuteParams | None,
    options: dict[str, Any] | None,
) -> BufferedResult:
    if not options and (result := run_direct(connection, statement, parameters)) is not None:
        return result
    return _buffered(connection.execute(statement, parameters, execution_options=options))


def _commit(connection: Connection) -> None:
    connection.commit()


def _execute_all(connection: Connection, deferred: list[_Deferred]) -> None:
    for entry in deferred:
        if isinstance(entry, tuple):
            if run_direct(connection, *entry) is None:
                connection.execute(*entry)
        else:
            entry(connection)


def _exec_driver_sql(
    connection: Connection, statement: str, parameters: _CoreAnyExecuteParams | None
) -> BufferedResult:
    return _buffered(connection.exec_driver_sql(statement, parameters))


def _buffered(result: Any) -> BufferedResult:
    if not result.returns_rows:
        return BufferedResult((), [], result.rowcount)
    rows = result.all()
    return BufferedResult(result.keys(), rows, result.rowcount)
