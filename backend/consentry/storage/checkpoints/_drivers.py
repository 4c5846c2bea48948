"""Running an operation (``_operations``) on a driver connection: sqlite3, or psycopg.

In the server, the connection is the one of an app transaction (``Database.read()`` /
``write()``): on SQLite the operation runs in one call of that connection, statement by statement on
the sqlite3 connection underneath SQLAlchemy's; on PostgreSQL on the transaction's psycopg
connection, awaited directly. The checkpointer's synchronous methods run it on a connection of
their own.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.rows import tuple_row
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection

from consentry.storage.checkpoints._operations import Operation, Query, Result
from consentry.storage.db.database import DbConnection
from consentry.storage.db.direct import (
    AnsweringCursor,
    as_sqlalchemy_error,
    execute_alone,
    is_prepared,
    one_message,
    prepare_new,
    returned_rows,
    send_message,
    statement_cursor,
)
from consentry.storage.db.sqlite_connection import SqliteConnection

__all__ = ["run_async", "run_on", "run_on_psycopg", "run_on_sqlite3", "send_with_next"]


def run_on_sqlite3(connection: sqlite3.Connection, operation: Operation) -> Any:
    """Run ``operation`` on a sqlite3 connection, in the caller's transaction."""
    try:
        query = next(operation)
        while True:
            query = operation.send(_sqlite3_execute(connection, query))
    except StopIteration as done:
        return done.value


def _sqlite3_execute(connection: sqlite3.Connection, query: Query) -> Result:
    if query.many is not None:
        cursor = connection.executemany(query.sql, query.many)
        return Result(rowcount=cursor.rowcount)
    cursor = connection.execute(query.sql, query.params)
    rows = cursor.fetchall() if cursor.description else []
    return Result(rows=rows, rowcount=cursor.rowcount)


def run_on_psycopg(connection: psycopg.Connection[Any], operation: Operation) -> Any:
    """Run ``operation`` on a synchronous psycopg connection, in the caller's transaction."""
    try:
        query = next(operation)
        while True:
            with connection.cursor(row_factory=tuple_row) as cursor:
                if query.many is not None:
                    cursor.executemany(query.sql, query.many)
                else:
                    cursor.execute(query.sql, query.params)
                rows = cursor.fetchall() if cursor.description else []
                result = Result(rows=rows, rowcount=cursor.rowcount)
            query = operation.send(result)
    except StopIteration as done:
        return done.value


async def run_async(
    connection: psycopg.AsyncConnection[Any],
    operation: Operation,
    *,
    before: Sequence[tuple[str, Any]] = (),
    commit: bool = False,
) -> Any:
    """Run ``operation`` on an async psycopg connection, in the caller's transaction.
    ``before``: statements with their parameters (``PostgresConnection.take_deferred``) sent in
    one message with the operation's first statement (on their own if it makes none).
    ``commit``: when that statement is also its last (``Query.last``), the transaction's
    ``COMMIT`` goes in the message too."""
    try:
        query = next(operation)
    except StopIteration as done:
        if before:  # taken from the transaction: sent, not lost
            await _send(connection, statement_cursor(connection), before, answer=len(before) - 1)
        return done.value
    try:
        while True:
            cursor = statement_cursor(connection)
            try:
                if query.many is not None:  # executemany sends its own messages
                    if before:
                        await _send(connection, cursor, before, answer=len(before) - 1)
                    await cursor.executemany(query.sql, query.many)
                else:
                    after = [("COMMIT", None)] if commit and query.last else []
                    statements = [*before, (query.sql, query.params), *after]
                    await _execute(connection, cursor, statements, answer=len(before))
            except sa_exc.DBAPIError as exc:
                # The operation may name what failed it (a fence that refused: its lease lost).
                with contextlib.suppress(StopIteration):
                    operation.throw(exc)
                raise  # what it did not name: the transaction failed all the same
            before, commit = (), False
            rows = await cursor.fetchall() if returned_rows(cursor) else []
            result = Result(rows=rows, rowcount=cursor.rowcount)
            query = operation.send(result)
    except StopIteration as done:
        return done.value


async def _execute(
    connection: psycopg.AsyncConnection[Any],
    cursor: AnsweringCursor,
    statements: list[tuple[str, Any]],
    *,
    answer: int,
) -> None:
    """The operation's statement (at ``answer``) with what goes before and after it: one
    message, or on its own a statement of psycopg's (server-side binding) unless prepared."""
    sql, parameters = statements[answer]
    try:
        await prepare_new(connection, statements)
        if len(statements) > 1 or is_prepared(sql, parameters):
            await _send(connection, cursor, statements, answer=answer)
        else:
            await execute_alone(cursor, sql, parameters)
    except psycopg.Error as exc:
        raise as_sqlalchemy_error(exc, sql) from exc


async def _send(
    connection: psycopg.AsyncConnection[Any],
    cursor: AnsweringCursor,
    statements: Sequence[tuple[str, Any]],
    *,
    answer: int,
) -> None:
    await send_message(cursor, one_message(connection, statements), answer=answer)


def _on_sqlalchemy_sqlite(connection: Connection, operation: Operation) -> Any:
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    return run_on_sqlite3(driver, operation)


async def run_on(
    conn: DbConnection, operation: Operation, *, unread: bool = False, commit: bool = False
) -> Any:
    """Run ``operation`` inside an app transaction (``Database.read()`` / ``write()``).
    ``unread``: nobody reads what it returns (a write, which raises when refused); on SQLite it
    then goes with the transaction's next call (``SqliteConnection.defer_call``), not one of its
    own, and returns None. ``commit``: the operation is the transaction's last work, every
    write of which is fenced; on PostgreSQL, when the operation is one statement, the
    transaction commits in the same message (one round trip for the whole transaction), unless
    a fence refused: its statement then fails the message, and the transaction commits nothing
    (``_operations.fenced_statement``). Elsewhere the transaction commits as usual, when its
    block ends."""
    if isinstance(conn, SqliteConnection):
        if unread:
            conn.defer_call(functools.partial(_on_sqlalchemy_sqlite, operation=operation))
            return None
        return await conn.run_sync(_on_sqlalchemy_sqlite, operation)
    driver = conn.driver
    # What the transaction deferred (its BEGIN, its events) goes with the first statement.
    before = conn.take_deferred()
    try:
        return await run_async(driver, operation, before=before, commit=commit)
    except BaseException:
        conn.mark_failed()  # what was taken may not have gone: the transaction cannot commit
        raise
    finally:
        if commit and driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            conn.mark_committed()


async def send_with_next(conn: DbConnection, operation: Operation) -> None:
    """Send ``operation``, a fenced write of one statement (a run's checkpoint), with the
    transaction's next statement, which must be fenced by the same lease and read (``run_on``
    with ``commit=True``): on PostgreSQL its row count is not read; a lease that moved on fails
    it, and with it the message of that next statement (reported as that statement's lost
    lease), so the transaction commits nothing. On SQLite it goes with the transaction's next
    call, checked."""
    if isinstance(conn, SqliteConnection):
        await run_on(conn, operation, unread=True)
        return
    query = next(operation)
    operation.close()
    if query.many is not None or not query.last:
        raise ValueError("only an operation of one statement goes with the next one")
    conn.defer_sql(query.sql, query.params)
