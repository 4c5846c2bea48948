"""SQLite connections that cost one thread hop per statement.

Each connection belongs to one thread (:class:`SqliteWorker`, on a ``SqliteThread``), which runs
what it is handed in order. SQLAlchemy's synchronous engine executes the statement and fetches
every row there, and the event loop gets a finished :class:`SqliteResult` back through one
future. An async driver makes three hops for the same statement (cursor, execute, fetch), each
with its own future and wake-up of the loop, plus a greenlet switch; measured, that was about a
quarter of the server's CPU per conversation (``docs/performance.md``).

:class:`SqliteConnection` is the transaction handed out by ``Database.read()`` and
``Database.write()`` on SQLite. It speaks the part of SQLAlchemy's ``AsyncConnection`` that the
storage modules use (``execute``, ``scalar``, ``exec_driver_sql``, ``run_sync``, ``dialect``), so
they run unchanged on both databases. Its transaction begins with its first statement (in the
same hop) and is committed in one more. A failed or cancelled one is rolled back on the thread
before the connection serves anyone else, because the thread runs its calls in order.

A statement whose result nobody reads (an audit record, say) need not cost a hop of its own:
``defer`` keeps it for the transaction's next hop, which runs it first, before that hop's own
statement or the commit. It fails there, inside the same transaction, so the transaction still
commits all or nothing (``database.execute_unread`` is how storage modules use it). Its
parameters are read when it runs: give it values nobody changes afterwards.

A connection serves one transaction at a time: ``Database`` holds a lock (the writer) or takes
an idle reader from a queue around each transaction, and nothing else touches the thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Engine
from sqlalchemy.engine import Connection, Dialect, IteratorResult
from sqlalchemy.engine.interfaces import _CoreAnyExecuteParams, _CoreSingleExecuteParams
from sqlalchemy.engine.result import SimpleResultMetaData
from sqlalchemy.sql.base import Executable

from consentry.storage.sqlite_thread import SqliteThread

__all__ = ["SqliteConnection", "SqliteResult", "SqliteWorker"]

T = TypeVar("T")
P = ParamSpec("P")
_Deferred = tuple[Executable, "_CoreAnyExecuteParams | None"] | Callable[[Connection], object]
"""A statement (with its parameters) or a call that runs at the transaction's next hop."""


class SqliteResult(IteratorResult[Any]):
    """A statement's result, every row already fetched, with the driver's ``rowcount``."""

    def __init__(self, keys: Iterable[str], rows: list[Any], rowcount: int) -> None:
        super().__init__(SimpleResultMetaData(list(keys)), iter(rows))
        self.rowcount = rowcount


class SqliteWorker:
    """One SQLite connection on its own :class:`SqliteThread`."""

    def __init__(self, engine: Engine, *, name: str, write: bool) -> None:
        self.dialect: Dialect = engine.dialect
        self.thread = SqliteThread(name)
        self._engine = engine
        # A writer takes SQLite's write lock up front, so another process's writer waits on the
        # busy timeout instead of failing halfway through a read-then-write transaction.
        self._begin_sql = "BEGIN IMMEDIATE" if write else "BEGIN"
        self._connection: Connection | None = None

    @property
    def connection(self) -> Connection:
        """The thread's connection: use it only in a call run by the thread."""
        assert self._connection is not None, "the worker is not started"
        return self._connection

    async def start(self) -> None:
        self.thread.start()
        await self.thread.call(self._connect)

    def _connect(self) -> None:
        self._connection = self._engine.connect()

    def in_transaction(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """On the thread: ``fn(connection, ...)``, in the open transaction or a new one.

        The transaction's ``BEGIN`` is ours, not an event hook's: SQLAlchemy would leave its
        connection unable to begin again after a hook that failed (``database is locked``)."""
        connection = self.connection
        if not connection.in_transaction():
            connection.begin()
            try:
                connection.exec_driver_sql(self._begin_sql)
            except BaseException:
                connection.rollback()
                raise
        return fn(connection, *args, **kwargs)

    async def stop(self) -> None:
        if self._connection is not None:
            self.thread.post(self._connection.close)
        await self.thread.stop()


class SqliteConnection:
    """One transaction on a :class:`SqliteWorker`'s connection (see the module's docstring)."""

    def __init__(self, worker: SqliteWorker) -> None:
        self._worker = worker
        self.dialect = worker.dialect
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
    ) -> SqliteResult:
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
    ) -> SqliteResult:
        return await self._call(_exec_driver_sql, statement, parameters)

    async def run_sync(
        self, fn: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(connection, ...)`` on the connection's thread, inside this transaction."""
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

        return await worker.thread.call(run)

    async def commit(self) -> None:
        """Commit, after the deferred statements (in the same hop)."""
        if self._deferred or self._used:
            await self._call(_commit)

    def end_without_waiting(self) -> None:
        """Roll back on the thread, ahead of any later transaction, without waiting for it.
        Deferred statements not run yet are dropped."""
        self._deferred.clear()
        if self._used:
            self._worker.thread.post(self._worker.connection.rollback)


def _execute(
    connection: Connection,
    statement: Executable,
    parameters: _CoreAnyExecuteParams | None,
    options: dict[str, Any] | None,
) -> SqliteResult:
    return _buffered(connection.execute(statement, parameters, execution_options=options))


def _commit(connection: Connection) -> None:
    connection.commit()


def _execute_all(connection: Connection, deferred: list[_Deferred]) -> None:
    for entry in deferred:
        if isinstance(entry, tuple):
            connection.execute(*entry)
        else:
            entry(connection)


def _exec_driver_sql(
    connection: Connection, statement: str, parameters: _CoreAnyExecuteParams | None
) -> SqliteResult:
    return _buffered(connection.exec_driver_sql(statement, parameters))


def _buffered(result: Any) -> SqliteResult:
    if not result.returns_rows:
        return SqliteResult((), [], result.rowcount)
    rows = result.all()
    return SqliteResult(result.keys(), rows, result.rowcount)
