"""SQLAlchemy's engine events on PostgreSQL: each transaction's ``BEGIN`` deferred, and what it
deferred sent in one message with its next statement or with its commit."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import psycopg
from sqlalchemy import Engine, event
from sqlalchemy.engine import Connection, ExceptionContext
from sqlalchemy.util import await_only

from consentry.storage.db.direct._deferral import (
    _BEGIN,
    _COMMIT,
    _COMMITTED,
    _DEFERRED,
    _INSTALLED,
    NO_TRANSACTION,
    _used_after_its_commit,
)
from consentry.storage.db.direct._messages import (
    AnsweringCursor,
    _Deferred,
    _one_query,
    as_sqlalchemy_error,
)

__all__ = ["install_postgres_deferral"]


async def _send(driver: psycopg.AsyncConnection[Any], deferred: _Deferred, *, commit: bool) -> None:
    query = _one_query(driver, [*deferred, _COMMIT] if commit else deferred)
    try:
        async with driver.cursor() as cursor:
            await cursor.execute(query)
    except psycopg.Error as exc:
        sql = next((s for s, _ in deferred if s != "BEGIN"), "BEGIN")
        raise as_sqlalchemy_error(exc, sql) from exc


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
