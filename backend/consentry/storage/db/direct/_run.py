"""A direct statement whose result is read, run at once on the driver: sqlite3 in the caller's
transaction, or psycopg in one message with what its transaction deferred."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any, cast

import psycopg
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable

from consentry.storage.db.direct._compiled_statement import (
    BufferedResult,
    _Compiled,
    _compiled,
    _Parameters,
    _rows,
)
from consentry.storage.db.direct._deferral import (
    _COMMIT,
    _COMMITTED,
    _DEFERRED,
    _INSTALLED,
    _used_after_its_commit,
)
from consentry.storage.db.direct._messages import (
    AnsweringCursor,
    _one_query,
    as_sqlalchemy_error,
    postgres_driver,
    returned_rows,
)

__all__ = ["commit_with_one_row_change_on_postgres", "run_direct", "run_direct_on_postgres"]


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


async def run_direct_on_postgres(
    conn: AsyncConnection, statement: Executable, parameters: Mapping[str, Any]
) -> BufferedResult | None:
    """Run a direct statement whose result is read (rows, a row count) on the psycopg
    connection under ``conn``, in one message with what its transaction deferred; None when it
    cannot be (as :func:`defer_on_postgres`): run it with SQLAlchemy. Past SQLAlchemy's
    execution and its greenlet bridge, a statement costs what psycopg's costs."""
    return await _run_on_postgres(conn, statement, parameters, last=False)


async def commit_with_one_row_change_on_postgres(
    conn: AsyncConnection, statement: Executable, parameters: Mapping[str, Any]
) -> BufferedResult | None:
    """Run a direct ``UPDATE … RETURNING`` that must change exactly one row as its transaction's
    last statement, in one message with what the transaction deferred and its ``COMMIT``: one
    round trip for the whole transaction. When it changes no row its statement fails
    (``division_by_zero``: :func:`refused_one_row_change`), which fails the message: nothing
    is committed, and the caller rolls back. Its rows are read once committed. None when it
    cannot run so: run it as usual."""
    return await _run_on_postgres(conn, statement, parameters, last=True)


async def _run_on_postgres(
    conn: AsyncConnection, statement: Executable, parameters: Mapping[str, Any], *, last: bool
) -> BufferedResult | None:
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
    if compiled is None or (last and not compiled.keys):
        return None
    driver = await postgres_driver(conn)
    deferred = _DEFERRED.get(sync)
    if deferred is _COMMITTED:
        raise _used_after_its_commit()
    arguments = cast(dict[str, Any], compiled.arguments(parameters))  # psycopg: by name
    sql = _one_row_or_fail(compiled.sql, compiled.keys) if last else compiled.sql
    sent = [*(deferred or ()), (sql, arguments), *([_COMMIT] if last else [])]
    message = _one_query(driver, sent) if len(sent) > 1 else None
    _DEFERRED.pop(sync, None)  # built: what was deferred goes with it
    async with driver.cursor() as cursor:  # an AnsweringCursor: it answers with our result
        if last:
            assert isinstance(cursor, AnsweringCursor)
            cursor.answer = len(sent) - 2  # the statement, before the COMMIT
        try:
            if message is not None:
                await cursor.execute(message)
            else:
                await cursor.execute(sql, arguments)
            rows = await cursor.fetchall() if returned_rows(cursor) else None
        except psycopg.Error as exc:
            raise as_sqlalchemy_error(exc, compiled.sql) from exc
        if last:
            _DEFERRED[sync] = _COMMITTED  # SQLAlchemy's commit then sends nothing
        return compiled.result(rows, cursor.rowcount, lambda: cursor.description or ())


def _one_row_or_fail(sql: str, keys: tuple[str, ...]) -> str:
    """``sql`` (a statement with ``RETURNING keys``) as one that returns its one row, or fails
    with ``division_by_zero`` when it changed none (and so fails its message)."""
    columns = ", ".join(f'(SELECT "{key}" FROM changed) AS "{key}"' for key in keys)
    return f"WITH changed AS ({sql}) SELECT {columns} WHERE 1 / (SELECT count(*) FROM changed) = 1"
