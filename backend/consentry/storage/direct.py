"""The hot path's statements, run on the driver directly, past SQLAlchemy's execution.

A storage module marks a statement it builds once (``direct(audit.insert())``): a write, a
``SELECT`` or a ``RETURNING`` with no Python-side column default, run with a dict of parameters
(or a list of them, for a write). The first time it runs with a given set of parameter names on
a database it is compiled with SQLAlchemy (the SQL, its parameters' order, its types' bind
processors, the values it carries itself, its columns' result processors); from then on it costs
what the driver costs plus one tuple or dict of parameters, and its rows are what SQLAlchemy's
result would give (:class:`BufferedResult`). SQLAlchemy's execution of the same statement (an
execution context, the compiled cache's key, the result proxy, and on PostgreSQL the greenlet
bridge) cost several times the statement itself on the server's hot path. A form that needs
what SQLAlchemy's execution does (a default, an expanding ``IN``) still runs through it, so a
statement is written once for both databases.

- **SQLite**: :func:`run_direct` runs it on sqlite3, in the caller's transaction, at once.
- **PostgreSQL**, a statement whose result is read (``database.execute``):
  :func:`run_direct_on_postgres` runs it on the psycopg connection under SQLAlchemy's, in one
  message with what its transaction deferred (below).
- **PostgreSQL**: a statement whose result nobody reads (``database.execute_unread``, the
  ``pg_notify`` of ``notify_at_commit``) is deferred (:func:`defer_on_postgres`): kept with the
  transaction and sent with whatever else was deferred, bound on the client, in one message with
  the transaction's next statement or its ``COMMIT`` (:func:`install_postgres_deferral` hooks
  SQLAlchemy's engine; the checkpointer's own statements and :func:`run_direct_on_postgres` take
  what was deferred into their own message: :func:`deferred_sql_on_postgres`).
  One round trip for all of them, where each was one: on PostgreSQL a round trip through
  psycopg's async driver is the largest cost of a statement. A deferred statement that fails
  fails its transaction at that point, as the statement itself would have at commit. What was
  deferred is taken off the transaction only once its message is built (a value that cannot be
  bound fails before anything is lost).

  The transaction's ``BEGIN`` is deferred the same way: the engine's psycopg connections are in
  autocommit mode (psycopg sends no ``BEGIN`` of its own, which was a round trip of its own), and
  each SQLAlchemy transaction starts with a deferred
  ``BEGIN`` that goes with its first statement or its commit; a transaction that sent nothing
  sends nothing. A connection opened with :data:`NO_TRANSACTION` (``Database.read()``) defers no
  ``BEGIN``: each of its statements runs on its own, which under ``READ COMMITTED`` sees what a
  transaction's statement would (each statement takes its own snapshot there) for one round
  trip instead of three.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import psycopg
from sqlalchemy import Engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Dialect, ExceptionContext, IteratorResult
from sqlalchemy.engine.result import SimpleResultMetaData
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.util import await_only

__all__ = [
    "NO_TRANSACTION",
    "AnsweringCursor",
    "BufferedResult",
    "as_sqlalchemy_error",
    "client_cursor",
    "commit_on_postgres",
    "committed_on_postgres",
    "defer_on_postgres",
    "defer_one_row_change_on_postgres",
    "defer_sql_on_postgres",
    "deferred_sql_on_postgres",
    "direct",
    "install_postgres_deferral",
    "postgres_driver",
    "refused_one_row_change",
    "returned_rows",
    "run_direct",
    "run_direct_on_postgres",
]

E = TypeVar("E", bound=Executable)
_Parameters = Mapping[str, Any] | Sequence[Mapping[str, Any]] | None

_DIRECT: dict[int, Executable] = {}
"""The statements marked :func:`direct`, by identity (held, so an identity is never reused)."""


class BufferedResult(IteratorResult[Any]):
    """A statement's result, every row already fetched, with the driver's ``rowcount``."""

    rowcount: int

    def __init__(self, keys: Iterable[str], rows: list[Any], rowcount: int) -> None:
        super().__init__(SimpleResultMetaData(list(keys)), iter(rows))
        self.rowcount = rowcount


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    carried: Mapping[str, Any]
    """The values the statement carries itself (``.values(status="ended")``)."""
    positional: bool
    """sqlite3 takes a tuple (``?``), psycopg a dict (``%(name)s``)."""
    keys: tuple[str, ...]
    """The names of the rows' columns (a ``SELECT``, a ``RETURNING``); empty: from the driver
    (a textual statement), or no rows."""
    row_processors: tuple[Callable[[Any], Any] | None, ...] | None
    """What SQLAlchemy's result would do to each column's value (SQLite's dates from text);
    None: nothing."""

    def result(
        self, rows: list[Any] | None, rowcount: int, description: Callable[[], Sequence[Any]]
    ) -> BufferedResult:
        """The rows as SQLAlchemy's result would give them (None: the statement returns none).
        ``description``: the driver's, read only when the statement does not name its columns
        (psycopg builds it anew at each read)."""
        if rows is None:
            return BufferedResult((), [], rowcount)
        processors = self.row_processors
        if processors is not None:
            rows = [
                tuple(
                    value if process is None else process(value)
                    for process, value in zip(processors, row, strict=True)
                )
                for row in rows
            ]
        keys = self.keys or tuple(column[0] for column in description())
        return BufferedResult(keys, rows, rowcount)

    def arguments(self, row: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        carried = self.carried
        values = [
            (row[name] if name in row else carried[name])
            if process is None
            else process(row[name] if name in row else carried[name])
            for name, process in zip(self.names, self.processors, strict=True)
        ]
        return tuple(values) if self.positional else dict(zip(self.names, values, strict=True))


_COMPILED: dict[tuple[int, str, tuple[str, ...]], _Compiled | None] = {}
"""By statement, database and parameter names; None: that form runs through SQLAlchemy."""


def direct(statement: E) -> E:
    """Mark a statement built once (a module's constant) to run on the driver directly."""
    _DIRECT[id(statement)] = statement
    return statement


def _rows(parameters: _Parameters) -> Sequence[Mapping[str, Any]]:
    if not parameters:
        return ()
    if isinstance(parameters, Mapping):
        return (parameters,)
    return parameters


def _compiled(statement: Executable, rows: Sequence[Mapping[str, Any]], dialect: Dialect) -> Any:
    if id(statement) not in _DIRECT or not rows:
        return None
    names = tuple(rows[0])
    key = (id(statement), dialect.name, names)
    try:
        return _COMPILED[key]
    except KeyError:
        compiled = _COMPILED[key] = _compile(statement, names, dialect)
        return compiled


def run_direct(
    connection: Connection, statement: Executable, parameters: _Parameters
) -> BufferedResult | None:
    """SQLite: run ``statement`` on the sqlite3 connection under ``connection`` and return its
    result, if it is marked :func:`direct` and can run so; else None (run it with
    SQLAlchemy)."""
    rows = _rows(parameters)
    compiled: _Compiled | None = _compiled(statement, rows, connection.dialect)
    many = len(rows) > 1 or not isinstance(parameters, Mapping)
    if compiled is None or (many and compiled.keys):  # rows of several statements: SQLAlchemy
        return None
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    try:
        if many:
            cursor = driver.executemany(compiled.sql, [compiled.arguments(row) for row in rows])
        else:
            cursor = driver.execute(compiled.sql, compiled.arguments(rows[0]))
        found = cursor.fetchall() if cursor.description else None
    except sqlite3.Error as exc:  # as SQLAlchemy raises it: IntegrityError, OperationalError…
        raise sa_exc.DBAPIError.instance(
            compiled.sql, None, exc, sqlite3.Error, hide_parameters=True
        ) from exc
    return compiled.result(found, cursor.rowcount, lambda: cursor.description)


# -- PostgreSQL: deferred, then sent in one message ------------------------------------------

_Deferred = list[tuple[str, Mapping[str, Any] | None]]

_BEGIN: tuple[str, None] = ("BEGIN", None)
_COMMIT: tuple[str, None] = ("COMMIT", None)
_COMMITTED: _Deferred = []
"""In ``_DEFERRED``, by identity: the transaction was committed with its last statement."""
NO_TRANSACTION = "consentry_no_transaction"
"""An execution option: the connection's statements run on their own, without a ``BEGIN``
(for statements that only read)."""

_DEFERRED: weakref.WeakKeyDictionary[Connection, _Deferred] = weakref.WeakKeyDictionary()
"""The statements each connection deferred (a ``Connection`` serves one checkout; set at every
begin, cleared at every commit and rollback)."""
_INSTALLED: weakref.WeakSet[Engine] = weakref.WeakSet()
"""The engines whose connections send what they defer (``install_postgres_deferral``)."""


def defer_on_postgres(
    conn: AsyncConnection, statement: Executable, parameters: _Parameters
) -> bool:
    """Keep a direct statement (nobody reads its result) for the transaction's next round trip;
    False when it cannot be (not marked :func:`direct`, a form SQLAlchemy must run, an engine
    without :func:`install_postgres_deferral`): run it now."""
    sync = conn.sync_connection
    if sync is None or sync.engine not in _INSTALLED:
        return False
    rows = _rows(parameters)
    compiled: _Compiled | None = _compiled(statement, rows, conn.dialect)
    if compiled is None or compiled.keys:  # rows nobody would read: not worth a message
        return False
    deferred = _deferred_in(sync)
    for row in rows:
        deferred.append((compiled.sql, cast(dict[str, Any], compiled.arguments(row))))
    return True


def defer_one_row_change_on_postgres(
    conn: AsyncConnection, statement: Executable, parameters: Mapping[str, Any]
) -> bool:
    """Like :func:`defer_on_postgres`, for a direct ``UPDATE`` that must change a row (a
    fenced release, by primary key): when it changes none, its statement fails
    (``division_by_zero``), which fails the message it goes in: the transaction commits
    nothing. Sent with the ``COMMIT``, it saves the round trip of reading its row count."""
    sync = conn.sync_connection
    if sync is None or sync.engine not in _INSTALLED:
        return False
    compiled: _Compiled | None = _compiled(statement, (parameters,), conn.dialect)
    if compiled is None or compiled.keys:
        return False
    checked = f"WITH changed AS ({compiled.sql} RETURNING 1) SELECT 1 / count(*) FROM changed"
    _deferred_in(sync).append((checked, cast(dict[str, Any], compiled.arguments(parameters))))
    return True


def refused_one_row_change(error: BaseException) -> bool:
    """Whether ``error`` is a statement of :func:`defer_one_row_change_on_postgres` that
    changed no row (PostgreSQL's ``division_by_zero``, which no other statement can raise)."""
    cause = error.orig if isinstance(error, sa_exc.DBAPIError) else error
    return getattr(cause, "sqlstate", None) == _DIVISION_BY_ZERO


_DIVISION_BY_ZERO = "22012"


def defer_sql_on_postgres(conn: AsyncConnection, sql: str, parameters: Mapping[str, Any]) -> bool:
    """Like :func:`defer_on_postgres`, for SQL written for psycopg (``%(name)s``)."""
    sync = conn.sync_connection
    if sync is None or sync.engine not in _INSTALLED:
        return False
    _deferred_in(sync).append((sql, parameters))
    return True


async def run_direct_on_postgres(
    conn: AsyncConnection, statement: Executable, parameters: Mapping[str, Any]
) -> BufferedResult | None:
    """Run a direct statement whose result is read (rows, a row count) on the psycopg
    connection under ``conn``, in one message with what its transaction deferred; None when it
    cannot be (as :func:`defer_on_postgres`): run it with SQLAlchemy. Past SQLAlchemy's
    execution and its greenlet bridge, a statement costs what psycopg's costs."""
    sync = conn.sync_connection
    if (
        sync is None
        or sync.engine not in _INSTALLED
        or sync.closed
        or sync.invalidated
        or not sync.in_transaction()  # SQLAlchemy's autobegin would not see it
    ):
        return None
    compiled: _Compiled | None = _compiled(statement, (parameters,), conn.dialect)
    if compiled is None:
        return None
    driver = await postgres_driver(conn)
    deferred = _DEFERRED.get(sync)
    if deferred is _COMMITTED:
        raise _used_after_its_commit()
    arguments = cast(dict[str, Any], compiled.arguments(parameters))  # psycopg: by name
    message = _one_query(driver, [*deferred, (compiled.sql, arguments)]) if deferred else None
    _DEFERRED.pop(sync, None)  # built: what was deferred goes with it
    async with driver.cursor() as cursor:  # an AnsweringCursor: it answers with our result
        try:
            if message is not None:
                await cursor.execute(message)
            else:
                await cursor.execute(compiled.sql, arguments)
            rows = await cursor.fetchall() if returned_rows(cursor) else None
        except psycopg.Error as exc:
            raise as_sqlalchemy_error(exc, compiled.sql) from exc
        return compiled.result(rows, cursor.rowcount, lambda: cursor.description or ())


async def postgres_driver(conn: AsyncConnection) -> psycopg.AsyncConnection[Any]:
    """The psycopg connection under ``conn`` (without a trip through the greenlet bridge when
    it is connected, as it is once its transaction began)."""
    sync = conn.sync_connection
    if sync is not None and not sync.closed and not sync.invalidated:
        driver = sync.connection.driver_connection
    else:
        driver = (await conn.get_raw_connection()).driver_connection
    assert isinstance(driver, psycopg.AsyncConnection)
    return driver


_ROWS = (psycopg.pq.ExecStatus.TUPLES_OK, psycopg.pq.ExecStatus.SINGLE_TUPLE)


def returned_rows(cursor: psycopg.AsyncCursor[Any]) -> bool:
    """Whether the statement ``cursor`` ran returned rows (``cursor.description`` says so too,
    after building an object per column: 2–3% of a conversation's CPU on PostgreSQL)."""
    result = cursor.pgresult
    return result is not None and result.status in _ROWS


def _deferred_in(sync: Connection) -> _Deferred:
    """The list ``sync``'s transaction defers to (refused once it committed)."""
    deferred = _DEFERRED.setdefault(sync, [])
    if deferred is _COMMITTED:
        raise _used_after_its_commit()
    return deferred


def deferred_sql_on_postgres(
    conn: AsyncConnection, driver: psycopg.AsyncConnection[Any]
) -> list[str]:
    """What ``conn``'s transaction deferred (its ``BEGIN`` first), taken as statements with their
    values bound, to send in one message with a statement run on ``driver`` outside SQLAlchemy
    (the checkpointer's: ``checkpoints._drivers.run_on``)."""
    sync = conn.sync_connection
    deferred = _DEFERRED.get(sync) if sync is not None else None
    if deferred is _COMMITTED:
        raise _used_after_its_commit()
    bound = _bound(driver, deferred) if deferred else []
    if sync is not None:
        _DEFERRED.pop(sync, None)  # bound: the caller sends them
    return bound


def commit_on_postgres(conn: AsyncConnection) -> None:
    """``conn``'s transaction was committed by a message sent on its driver (``run_on(…,
    commit=True)``): nothing may run in it any more, and SQLAlchemy's commit sends nothing."""
    if conn.sync_connection is not None:
        _DEFERRED[conn.sync_connection] = _COMMITTED


def committed_on_postgres(conn: AsyncConnection) -> bool:
    """Whether :func:`commit_on_postgres` marked ``conn``'s transaction (until it ends)."""
    sync = conn.sync_connection
    return sync is not None and _DEFERRED.get(sync) is _COMMITTED


def _used_after_its_commit() -> RuntimeError:
    return RuntimeError("a statement ran in a transaction already committed with its last one")


_CLIENT_CURSOR = "_consentry_client_cursor"


def client_cursor(driver: psycopg.AsyncConnection[Any]) -> psycopg.AsyncClientCursor[Any]:
    """A cursor that binds values on the client (``mogrify``), one a connection, kept on it
    (a cache keyed by the connection would keep it alive: the cursor refers to it): a new
    cursor a statement, with its adapters, cost half as much again (15 against 10 µs)."""
    client: psycopg.AsyncClientCursor[Any] | None = getattr(driver, _CLIENT_CURSOR, None)
    if client is None:
        client = psycopg.AsyncClientCursor(driver)
        setattr(driver, _CLIENT_CURSOR, client)
    return client


def _bound(driver: psycopg.AsyncConnection[Any], deferred: _Deferred) -> list[str]:
    client = client_cursor(driver)
    return [
        sql if parameters is None else client.mogrify(sql, parameters)
        for sql, parameters in deferred
    ]


def _one_query(driver: psycopg.AsyncConnection[Any], deferred: _Deferred) -> str:
    """The statements as one query: their parameters bound by psycopg on the client
    (``ClientCursor.mogrify``, psycopg's own quoting), so that the simple query protocol sends
    them in one message, answered in one round trip (a pipeline did the same with a message,
    a flush and a wait per statement, which cost more than the round trips it saved)."""
    return ";\n".join(_bound(driver, deferred))


def as_sqlalchemy_error(exc: psycopg.Error, sql: str) -> sa_exc.StatementError:
    """A psycopg error as SQLAlchemy raises it (``IntegrityError``, ``OperationalError``…),
    naming the statement's SQL (never its parameters)."""
    return sa_exc.DBAPIError.instance(sql, None, exc, psycopg.Error, hide_parameters=True)


async def _send(driver: psycopg.AsyncConnection[Any], deferred: _Deferred, *, commit: bool) -> None:
    query = _one_query(driver, [*deferred, _COMMIT] if commit else deferred)
    try:
        async with driver.cursor() as cursor:
            await cursor.execute(query)
    except psycopg.Error as exc:
        sql = next((s for s, _ in deferred if s != "BEGIN"), "BEGIN")
        raise as_sqlalchemy_error(exc, sql) from exc


class AnsweringCursor(psycopg.AsyncCursor[Any]):
    """After a message of several statements (what a transaction deferred, the statement its
    caller runs, maybe a ``COMMIT``), the cursor stands on the result of the statement at
    ``answer`` (default: the last, the caller's)."""

    answer: int = -1

    def _set_results(self, results: list[Any]) -> None:
        # psycopg's own (3.3) selects the first result, and ``nextset()`` each of the others in
        # turn, every one at the cost of its loaders and row maker: a few per cent of a
        # conversation's CPU on PostgreSQL. Straight to the answer instead.
        if self._execmany_returning is None and len(results) > 1:
            self._results[:] = results
            self._select_current_result(self.answer % len(results))
        else:
            super()._set_results(results)


_SENT_FOR: weakref.WeakKeyDictionary[Connection, tuple[str, str]] = weakref.WeakKeyDictionary()
"""By connection, the last message a SQLAlchemy statement went in, and that statement (an error
names the statement, not the message's values)."""


def install_postgres_deferral(engine: Engine) -> None:
    """Hook ``engine`` (an async engine's ``sync_engine``) so that its connections defer their
    ``BEGIN`` and send what they deferred in one message with their next statement, or with their
    commit."""
    _INSTALLED.add(engine)

    def driver_of(conn: Connection) -> psycopg.AsyncConnection[Any]:
        driver = conn.connection.driver_connection
        assert isinstance(driver, psycopg.AsyncConnection)
        return driver

    @event.listens_for(engine, "connect")
    def without_implicit_begin(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.autocommit = True  # the BEGIN is ours: deferred (see "begin")
        dbapi_connection.driver_connection.cursor_factory = AnsweringCursor

    @event.listens_for(engine, "begin")
    def defer_the_begin(conn: Connection) -> None:
        if conn.get_execution_options().get(NO_TRANSACTION):
            _DEFERRED.pop(conn, None)
        else:
            _DEFERRED[conn] = [_BEGIN]

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def send_with_the_statement(
        conn: Connection,
        _cursor: Any,
        statement: str,
        parameters: Any,
        _context: Any,
        executemany: bool,
    ) -> tuple[str, Any]:
        deferred = _DEFERRED.get(conn)
        if deferred is _COMMITTED:
            raise _used_after_its_commit()
        if not deferred:
            return statement, parameters
        driver = driver_of(conn)
        if executemany or not isinstance(parameters, Mapping):
            await_only(_send(driver, deferred, commit=False))
            _DEFERRED.pop(conn, None)
            return statement, parameters
        # One message: the statement's values bound on the client too; the cursor answers with
        # the statement's own result (``AnsweringCursor``).
        message = _one_query(driver, [*deferred, (statement, parameters)])
        _DEFERRED.pop(conn, None)  # built: what was deferred goes with the statement
        _SENT_FOR[conn] = (message, statement)
        return message, None

    @event.listens_for(engine, "handle_error")
    def name_the_statement(context: ExceptionContext) -> None:
        sent = _SENT_FOR.get(context.connection) if context.connection is not None else None
        error = context.sqlalchemy_exception
        if sent is not None and sent[0] is context.statement and error is not None:
            error.statement = sent[1]  # not the message, which holds the values

    @event.listens_for(engine, "commit")
    def send_with_the_commit(conn: Connection) -> None:
        deferred = _DEFERRED.pop(conn, None)
        if deferred and deferred != [_BEGIN]:  # one that sent nothing (or committed) sends nothing
            # The COMMIT goes with them: SQLAlchemy's then finds nothing to do.
            await_only(_send(driver_of(conn), deferred, commit=True))

    @event.listens_for(engine, "rollback")
    def forget(conn: Connection) -> None:
        _DEFERRED.pop(conn, None)


def _compile(statement: Executable, names: tuple[str, ...], dialect: Dialect) -> _Compiled | None:
    assert isinstance(statement, ClauseElement)
    # As for executemany: no implicit RETURNING of a generated key nobody reads (PostgreSQL).
    compiled = statement.compile(dialect=dialect, column_keys=list(names), for_executemany=True)
    assert isinstance(compiled, SQLCompiler)
    binds = compiled.binds.values()
    order = compiled.positiontup
    if (
        compiled.insert_prefetch
        or compiled.update_prefetch
        or compiled.escaped_bind_names
        or compiled.literal_execute_params
        or any(bind.expanding for bind in binds)
        or not {bind.key for bind in binds if bind.required} <= set(names)
    ):
        return None  # SQLAlchemy's execution does what this one does not
    carried = compiled.construct_params(_check=False)
    if order is None:  # named parameters (psycopg): every one the statement has
        order = list(carried)
    processors = cast(Mapping[str, Callable[[Any], Any]], compiled._bind_processors)
    columns = compiled._result_columns
    try:
        row_processors = tuple(
            column.type._cached_result_processor(dialect, None) for column in columns
        )
    except Exception:  # a processor that wants the driver's column type (a NUMERIC's scale)
        return None
    return _Compiled(
        sql=compiled.string,
        names=tuple(order),
        processors=tuple(processors.get(name) for name in order),
        carried=carried,
        positional=compiled.positiontup is not None,
        keys=tuple(column.keyname for column in columns),
        row_processors=row_processors if any(row_processors) else None,
    )
