"""Running an operation (``_operations``) on a driver connection: sqlite3, or psycopg.

In the server, the connection is the one of an app transaction (``Database.read()`` /
``write()``): on SQLite the operation runs in one call of that connection, statement by statement on
the sqlite3 connection underneath SQLAlchemy's; on PostgreSQL on the psycopg
connection underneath SQLAlchemy's, awaited directly (no greenlet bridge per statement). The
checkpointer's synchronous methods run it on a connection of their own.
"""

from __future__ import annotations

import functools
import sqlite3
from typing import Any

import psycopg
from psycopg.rows import tuple_row
from sqlalchemy.engine import Connection

from consentry.storage.checkpoints._operations import Operation, Query, Result
from consentry.storage.database import DbConnection
from consentry.storage.direct import as_sqlalchemy_error, deferred_sql_on_postgres
from consentry.storage.sqlite_connection import SqliteConnection

__all__ = ["run_async", "run_on", "run_on_psycopg", "run_on_sqlite3"]


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
    connection: psycopg.AsyncConnection[Any], operation: Operation, *, before: str | None = None
) -> Any:
    """Run ``operation`` on an async psycopg connection, in the caller's transaction.
    ``before``: statements (SQL with their values bound: ``direct.deferred_sql_on_postgres``)
    sent with the operation's first statement, in one message and one round trip."""
    try:
        query = next(operation)
        while True:
            async with connection.cursor(row_factory=tuple_row) as cursor:
                if before is not None:
                    await _execute_after(connection, cursor, before, query)
                    before = None
                elif query.many is not None:
                    await cursor.executemany(query.sql, query.many)
                else:
                    await cursor.execute(query.sql, query.params)
                rows = await cursor.fetchall() if cursor.description else []
                result = Result(rows=rows, rowcount=cursor.rowcount)
            query = operation.send(result)
    except StopIteration as done:
        return done.value


async def _execute_after(
    connection: psycopg.AsyncConnection[Any],
    cursor: psycopg.AsyncCursor[Any],
    before: str,
    query: Query,
) -> None:
    try:
        if query.many is not None:
            await cursor.execute(before)
            await cursor.executemany(query.sql, query.many)
            return
        bound = psycopg.AsyncClientCursor(connection).mogrify(query.sql, query.params)
        await cursor.execute(f"{before};\n{bound}")
    except psycopg.Error as exc:
        raise as_sqlalchemy_error(exc, query.sql) from exc
    while cursor.nextset():  # the operation's statement answers last
        pass


def _on_sqlalchemy_sqlite(connection: Connection, operation: Operation) -> Any:
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    return run_on_sqlite3(driver, operation)


async def run_on(conn: DbConnection, operation: Operation, *, unread: bool = False) -> Any:
    """Run ``operation`` inside an app transaction (``Database.read()`` / ``write()``).
    ``unread``: nobody reads what it returns (a write, which raises when refused); on SQLite it
    then goes with the transaction's next call (``SqliteConnection.defer_call``), not one of its
    own, and returns None."""
    if isinstance(conn, SqliteConnection):
        if unread:
            conn.defer_call(functools.partial(_on_sqlalchemy_sqlite, operation=operation))
            return None
        return await conn.run_sync(_on_sqlalchemy_sqlite, operation)
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    assert isinstance(driver, psycopg.AsyncConnection)
    # What the transaction deferred (its BEGIN, its events) goes with the first statement.
    return await run_async(driver, operation, before=deferred_sql_on_postgres(conn, driver))
