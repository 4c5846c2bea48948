"""The hot path's write statements on SQLite, run on sqlite3 directly, past SQLAlchemy's execution.

A storage module marks a statement it builds once (``direct(audit.insert())``): a write with no
``RETURNING`` and no Python-side column default, run with a dict of parameters (or a list of
them). On SQLite, the first time it runs with a given set of parameter names it is compiled with
SQLAlchemy (the SQL, the order of its parameters, its types' bind processors, the values it
carries itself), and from then on it costs what sqlite3 costs plus one tuple of parameters:
SQLAlchemy's execution of the same statement (an execution context, the compiled cache's key,
the result proxy) cost several times the statement itself on the server's hot path
(``docs/performance.md``). Anything else, and such a statement on PostgreSQL, runs through
SQLAlchemy as before, so a statement is written once for both databases.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement

__all__ = ["direct", "run_direct"]

E = TypeVar("E", bound=Executable)

_DIRECT: dict[int, Executable] = {}
"""The statements marked :func:`direct`, by identity (held, so an identity is never reused)."""


@dataclass(frozen=True, slots=True)
class _Compiled:
    sql: str
    names: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]
    carried: Mapping[str, Any]
    """The values the statement carries itself (``.values(status="ended")``)."""


_COMPILED: dict[tuple[int, tuple[str, ...]], _Compiled | None] = {}
"""By statement and parameter names; None: that form runs through SQLAlchemy."""


def direct(statement: E) -> E:
    """Mark a statement built once (a module's constant) to run on sqlite3 directly."""
    _DIRECT[id(statement)] = statement
    return statement


def run_direct(
    connection: Connection,
    statement: Executable,
    parameters: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
) -> int | None:
    """Run ``statement`` on the sqlite3 connection under ``connection`` and return its row
    count, if it is marked :func:`direct` and can run so; else None (run it with SQLAlchemy)."""
    if id(statement) not in _DIRECT or not parameters:
        return None
    many = not isinstance(parameters, Mapping)
    rows: Sequence[Mapping[str, Any]] = parameters if many else (parameters,)  # type: ignore[assignment]
    names = tuple(rows[0])
    key = (id(statement), names)
    try:
        compiled = _COMPILED[key]
    except KeyError:
        compiled = _COMPILED[key] = _compile(statement, names, connection.dialect)
    if compiled is None:
        return None
    driver = connection.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    try:
        if many:
            cursor = driver.executemany(compiled.sql, [_arguments(compiled, row) for row in rows])
        else:
            cursor = driver.execute(compiled.sql, _arguments(compiled, rows[0]))
    except sqlite3.Error as exc:  # as SQLAlchemy raises it: IntegrityError, OperationalError…
        raise sa_exc.DBAPIError.instance(
            compiled.sql, None, exc, sqlite3.Error, hide_parameters=True
        ) from exc
    return cursor.rowcount


def _arguments(compiled: _Compiled, row: Mapping[str, Any]) -> tuple[Any, ...]:
    carried = compiled.carried
    return tuple(
        (row[name] if name in row else carried[name])
        if process is None
        else process(row[name] if name in row else carried[name])
        for name, process in zip(compiled.names, compiled.processors, strict=True)
    )


def _compile(statement: Executable, names: tuple[str, ...], dialect: Dialect) -> _Compiled | None:
    assert isinstance(statement, ClauseElement)
    compiled = statement.compile(dialect=dialect, column_keys=list(names))
    assert isinstance(compiled, SQLCompiler)
    binds = compiled.binds.values()
    if (
        compiled.insert_prefetch
        or compiled.update_prefetch
        or compiled.effective_returning
        or compiled.positiontup is None
        or any(bind.expanding for bind in binds)
        or not {bind.key for bind in binds if bind.required} <= set(names)
    ):
        return None  # SQLAlchemy's execution does what this one does not
    processors = cast(Mapping[str, Callable[[Any], Any]], compiled._bind_processors)
    return _Compiled(
        sql=compiled.string,
        names=tuple(compiled.positiontup),
        processors=tuple(processors.get(name) for name in compiled.positiontup),
        carried=compiled.construct_params(_check=False),
    )
