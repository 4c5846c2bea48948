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
    _COMMITTED,
    _DEFERRED,
    _INSTALLED,
    _used_after_its_commit,
)
from consentry.storage.db.direct._messages import (
    _one_query,
    as_sqlalchemy_error,
    postgres_driver,
    returned_rows,
)

__all__ = ["run_direct", "run_direct_on_postgres"]


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
