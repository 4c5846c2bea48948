"""A direct statement run at once on sqlite3, in the caller's transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection
from sqlalchemy.sql.base import Executable

from consentry.storage.db.direct._compiled_statement import (
    BufferedResult,
    _Compiled,
    _compiled,
    _Parameters,
    _rows,
)

__all__ = ["run_direct"]


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
