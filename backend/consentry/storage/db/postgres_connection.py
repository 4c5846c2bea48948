"""PostgreSQL transactions on psycopg connections, past SQLAlchemy's engine.

A conversation opens about fifteen transactions on PostgreSQL. SQLAlchemy's async engine cost
more than their statements: its pool's checkout and checkin, its ``Connection`` and its
transaction objects, and two crossings of its greenlet bridge a transaction, though none of a
conversation's statements ran through its execution (``storage.db.direct``). Here a
transaction is a psycopg connection taken from a pool (``postgres_pool.PostgresPool``), and
:class:`PostgresConnection` speaks the part of SQLAlchemy's ``AsyncConnection`` that the storage
modules use (``execute``, ``scalar``, ``exec_driver_sql``, ``dialect``), as ``SqliteConnection``
does on SQLite, so they run unchanged on both databases. SQLAlchemy still compiles every
statement (once, for those marked ``direct``; through its compiled cache for the others) and
runs the migrations.

**One message a round trip.** The connections are in autocommit mode: psycopg sends no
``BEGIN`` of its own. A write transaction's ``BEGIN`` is deferred, with every statement whose
result nobody reads (``database.execute_unread``: an audit record, an event, a ``pg_notify``),
and goes in one message with the transaction's next statement or its ``COMMIT``, its values bound
on the client (``direct.one_message``; a statement the process runs often as ``EXECUTE`` of one
prepared on the connection), so that the simple query protocol sends them together and the
cursor answers with the caller's statement's result (``direct.AnsweringCursor``). A
transaction that sent nothing sends nothing. A deferred statement that fails fails the message
it goes in, so the transaction still commits all or nothing. A read transaction
(``Database.read()``) sends no ``BEGIN``: under ``READ COMMITTED`` each of its statements sees
what it would in a transaction (each statement takes its own snapshot there), for one round trip
a statement instead of three.

**Ending.** The transaction commits when its block ends (or was committed with its last statement:
:meth:`PostgresConnection.commit_with_one_row_change`, the checkpointer's ``run_on(…,
commit=True)``), is rolled back if the block raised, and its connection goes back to the pool
either way, even when the caller is cancelled meanwhile (the cancellation is raised after). A
connection the database dropped is discarded by the pool when it is given back.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from sqlalchemy.engine import Dialect
from sqlalchemy.engine.interfaces import _CoreAnyExecuteParams, _CoreSingleExecuteParams
from sqlalchemy.sql.base import Executable

from consentry.storage.db.direct import (
    BufferedResult,
    as_sqlalchemy_error,
    compiled_for_driver,
    execute_alone,
    is_prepared,
    one_message,
    preparable,
    prepare_new,
    returned_rows,
    send_message,
    statement_cursor,
)

__all__ = ["PostgresConnection", "refused_one_row_change"]

T = TypeVar("T")
_Statement = tuple[str, Any]
"""A statement and its parameters as psycopg takes them (None: none)."""
_BEGIN: _Statement = ("BEGIN", None)
_COMMIT: _Statement = ("COMMIT", None)
_DIVISION_BY_ZERO = "22012"


class PostgresConnection:
    """One transaction on a pooled psycopg connection (see the module's docstring)."""

    def __init__(self, driver: psycopg.AsyncConnection[Any], dialect: Dialect, *, read: bool):
        self.driver = driver
        self.dialect = dialect
        self._deferred: list[_Statement] = [] if read else [_BEGIN]
        self._committed = False
        self._failed = False
        self._read = read

    @property
    def committed(self) -> bool:
        """Whether the transaction was committed in the message of its last statement."""
        return self._committed

    # What waits for the next round trip

    def defer(self, statement: Executable, parameters: _CoreAnyExecuteParams) -> None:
        """Keep ``statement`` (its result unread) for the transaction's next round trip."""
        rows: Sequence[Mapping[str, Any]] = (
            [parameters] if isinstance(parameters, Mapping) else list(parameters or [{}])
        )
        self._refuse_after_commit()
        for row in rows:
            compiled = compiled_for_driver(statement, row, self.dialect)
            self._deferred.append((compiled.sql, compiled.arguments(row)))

    def defer_sql(self, sql: str, parameters: Mapping[str, Any] | Sequence[Any] | None) -> None:
        """Like :meth:`defer`, for SQL written for psycopg (``%(name)s``)."""
        self._refuse_after_commit()
        self._deferred.append((sql, parameters))

    def defer_one_row_change(self, statement: Executable, parameters: Mapping[str, Any]) -> None:
        """Like :meth:`defer`, for an ``UPDATE`` that must change a row (a fenced release, by
        primary key): when it changes none, its statement fails (``division_by_zero``:
        :func:`refused_one_row_change`), which fails the message it goes in, and the transaction
        commits nothing. Sent with the ``COMMIT``, it saves the round trip of its row count."""
        compiled = compiled_for_driver(statement, parameters, self.dialect)
        checked = _one_row_or_fail(
            f"{compiled.sql} RETURNING 1 AS one", ("one",), compiled.constants
        )
        self.defer_sql(checked, compiled.arguments(parameters))

    def take_deferred(self) -> list[tuple[str, Any]]:
        """What the transaction deferred (its ``BEGIN`` first), statements with their
        parameters, taken to send in one message with a statement run on :attr:`driver` directly
        (the checkpointer's: ``checkpoints._drivers.run_on``)."""
        self._refuse_after_commit()
        deferred, self._deferred = self._deferred, []
        return deferred

    @property
    def ends_unsent(self) -> bool:
        """Whether the transaction's end sends nothing: it was committed with its last
        statement, or nothing was sent and nothing but its ``BEGIN`` waits."""
        if self._committed:
            return True
        return not self._in_transaction() and all(s is _BEGIN for s in self._deferred)

    def mark_committed(self) -> None:
        """The transaction was committed by a message sent on :attr:`driver`: nothing may run in
        it any more, and its end sends nothing."""
        self._committed = True

    # Statements whose result is read

    async def execute(
        self,
        statement: Executable,
        parameters: _CoreAnyExecuteParams | None = None,
        *,
        execution_options: Mapping[str, Any] | None = None,
    ) -> BufferedResult:
        if execution_options:
            raise ValueError("execution options are not supported on PostgreSQL connections")
        if isinstance(parameters, Sequence) and len(parameters) == 1:
            parameters = parameters[0]  # one row: as SQLAlchemy runs it, its rows read
        if parameters is not None and not isinstance(parameters, Mapping):
            self.defer(statement, parameters)  # several rows: their counts are not read
            await self._flush()
            return BufferedResult((), [], -1)
        row = parameters or {}
        compiled = compiled_for_driver(statement, row, self.dialect)
        return await self._send(compiled.sql, compiled.arguments(row), compiled.result)

    async def scalar(
        self,
        statement: Executable,
        parameters: _CoreSingleExecuteParams | None = None,
        *,
        execution_options: Mapping[str, Any] | None = None,
    ) -> Any:
        result = await self.execute(statement, parameters, execution_options=execution_options)
        return result.scalar()

    async def exec_driver_sql(
        self, statement: str, parameters: Mapping[str, Any] | Sequence[Any] | None = None
    ) -> BufferedResult:
        """``statement`` as psycopg takes it (``%s`` / ``%(name)s``), with what was deferred."""
        return await self._send(statement, parameters, None)

    async def commit_with_one_row_change(
        self, statement: Executable, parameters: Mapping[str, Any]
    ) -> BufferedResult:
        """Run an ``UPDATE … RETURNING`` that must change exactly one row as the transaction's
        last statement, in one message with what was deferred and the ``COMMIT``: one round trip
        for the whole transaction. When it changes no row its statement fails
        (``division_by_zero``: :func:`refused_one_row_change`), which fails the message: nothing
        is committed, and the caller must end the transaction with an error."""
        compiled = compiled_for_driver(statement, parameters, self.dialect)
        if not compiled.keys:
            raise ValueError("the statement must return the changed row's columns")
        checked = _one_row_or_fail(compiled.sql, compiled.keys, compiled.constants)
        return await self._send(
            checked, compiled.arguments(parameters), compiled.result, commit=True
        )

    # The round trips

    async def _send(
        self,
        sql: str,
        arguments: Mapping[str, Any] | Sequence[Any] | None,
        result: Any,
        *,
        commit: bool = False,
    ) -> BufferedResult:
        self._refuse_after_commit()
        deferred = self._deferred
        sent: list[_Statement] = [*deferred, (sql, arguments), *([_COMMIT] * commit)]
        try:
            await prepare_new(self.driver, sent)
        except BaseException as exc:
            self._failed = True
            if isinstance(exc, psycopg.Error):
                raise as_sqlalchemy_error(exc, sql) from exc
            raise
        message = None
        if deferred or commit or is_prepared(sql, arguments):
            # built before anything is taken: a value that cannot be bound fails here, and
            # nothing is lost
            message = one_message(self.driver, sent)
        self._deferred = []
        try:
            cursor = statement_cursor(self.driver)
            try:
                if message is not None:  # the statement, after what was deferred
                    await send_message(cursor, message, answer=len(deferred))
                else:
                    await execute_alone(cursor, sql, arguments)
                rows = await cursor.fetchall() if returned_rows(cursor) else None
            except psycopg.Error as exc:
                raise as_sqlalchemy_error(exc, sql) from exc
            if commit:
                self._committed = True
            if result is None:  # SQL of the caller's: its columns as the driver names them
                columns = [column[0] for column in cursor.description or ()]
                return BufferedResult(columns, rows or [], cursor.rowcount)
            built: BufferedResult = result(rows, cursor.rowcount, lambda: cursor.description or ())
            return built
        except BaseException as exc:
            self._failed = True  # what went with it may be lost: the transaction cannot commit
            if message is not None:
                message.failed(self.driver, exc)
            raise

    async def _flush(self, *, commit: bool = False) -> None:
        deferred = self._deferred
        began = self._in_transaction()
        if deferred == [_BEGIN]:
            deferred = []  # a transaction that sent nothing sends nothing
        elif deferred[:1] == [_BEGIN]:
            began = True
        statements = [*deferred, *([_COMMIT] if commit and began else [])]
        if not statements:
            self._deferred = []
            return
        message = None
        try:
            await prepare_new(self.driver, statements)
            message = one_message(self.driver, statements)  # before anything is taken
            self._deferred = []
            await send_message(statement_cursor(self.driver), message)
        except BaseException as exc:
            self._failed = True
            if message is not None:
                message.failed(self.driver, exc)
            if isinstance(exc, psycopg.Error):
                named = next((sql for sql, _ in deferred if sql != "BEGIN"), "COMMIT")
                raise as_sqlalchemy_error(exc, named) from exc
            raise

    def mark_failed(self) -> None:
        """A statement sent on :attr:`driver` directly failed (or what was taken for it was not
        sent): the transaction cannot commit."""
        self._failed = True

    def _in_transaction(self) -> bool:
        return self.driver.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def _refuse_after_commit(self) -> None:
        if self._committed:
            raise RuntimeError(
                "a statement ran in a transaction already committed with its last one"
            )

    async def commit(self) -> None:
        """Send what was deferred with the ``COMMIT`` (nothing when nothing was sent). A
        transaction one of whose statements failed cannot commit (PostgreSQL would answer its
        ``COMMIT`` with a rollback): that is an error, not a silent loss."""
        if self._committed:
            return
        failed = self.driver.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        if failed or (self._failed and not self._read):  # a read's statements stand alone
            raise RuntimeError("a transaction one of whose statements failed cannot commit")
        await self._flush(commit=True)

    async def rollback(self) -> None:
        """Roll back what was sent; what was deferred is dropped."""
        self._deferred = []
        if self._in_transaction() and not self.driver.closed:
            await self.driver.rollback()


def refused_one_row_change(error: BaseException) -> bool:
    """Whether ``error`` is a statement of :meth:`PostgresConnection.defer_one_row_change` or
    :meth:`~PostgresConnection.commit_with_one_row_change` that changed no row (PostgreSQL's
    ``division_by_zero``, which no other statement of ours can raise)."""
    cause = getattr(error, "orig", None) or error
    return getattr(cause, "sqlstate", None) == _DIVISION_BY_ZERO


@functools.lru_cache(maxsize=256)
def _one_row_or_fail(sql: str, keys: tuple[str, ...], constants: tuple[str, ...] | None) -> str:
    """``sql`` (a statement with ``RETURNING keys``) as one that returns its one row, or fails
    with ``division_by_zero`` when it changed none (and so fails its message). Made once a
    statement (a claim, a release: every run's), and declared preparable when ``sql`` was
    compiled once (``constants``: its own values' parameters)."""
    columns = ", ".join(f'(SELECT "{key}" FROM changed) AS "{key}"' for key in keys)
    checked = (
        f"WITH changed AS ({sql}) SELECT {columns} WHERE 1 / (SELECT count(*) FROM changed) = 1"
    )
    if constants is not None:
        preparable(checked, constants)
    return checked
