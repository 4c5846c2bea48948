"""What a PostgreSQL transaction deferred: its ``BEGIN`` and the statements whose result nobody
reads, kept by connection until its next round trip or its commit takes them."""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any, cast

import psycopg
from sqlalchemy import Engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable

from consentry.storage.db.direct._compiled_statement import _Compiled, _compiled, _Parameters, _rows
from consentry.storage.db.direct._messages import _bound, _Deferred

__all__ = [
    "NO_TRANSACTION",
    "commit_on_postgres",
    "committed_on_postgres",
    "defer_on_postgres",
    "defer_one_row_change_on_postgres",
    "defer_sql_on_postgres",
    "deferred_sql_on_postgres",
    "refused_one_row_change",
]

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
