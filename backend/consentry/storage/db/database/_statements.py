"""Running a statement in a transaction of either database: its result read, or nobody's
(deferred where it can be), and a notice sent once the transaction commits."""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy.engine import CursorResult
from sqlalchemy.engine.interfaces import _CoreAnyExecuteParams
from sqlalchemy.sql.base import Executable

from consentry.storage.db.database._database import DbConnection
from consentry.storage.db.direct import preparable
from consentry.storage.db.sqlite_connection import SqliteConnection

__all__ = ["execute", "execute_unread", "notify_at_commit"]


_NOTIFY = "SELECT pg_notify(%(channel)s, %(payload)s)"
preparable(_NOTIFY)


async def notify_at_commit(conn: DbConnection, channel: str, payload: str) -> None:
    """Tell the listeners of ``channel`` (``runtime.notifications``) once the caller's transaction
    commits, and not if it rolls back: PostgreSQL's ``NOTIFY``, which every process listening
    gets (repeats in one transaction are folded into one; the ``pg_notify`` goes with the
    transaction's next round trip); on SQLite, where one process serves the file, that process's
    own listeners, right after the commit."""
    if isinstance(conn, SqliteConnection):
        if (channel, payload) not in conn.notices:
            conn.notices.append((channel, payload))
    else:
        conn.defer_sql(_NOTIFY, {"channel": channel, "payload": payload})


async def execute(
    conn: DbConnection, statement: Executable, parameters: _CoreAnyExecuteParams
) -> CursorResult[*tuple[Any, ...]]:
    """Run a statement whose result is read (its rows, its row count), on the driver: on
    SQLite a statement marked ``direct`` past SQLAlchemy's execution, on PostgreSQL every one,
    in one message with what the transaction deferred (``postgres_connection``). Either way the
    result is read as SQLAlchemy's (``direct.BufferedResult``: its rows, its row count)."""
    result: Any = await conn.execute(statement, parameters)
    return cast("CursorResult[*tuple[Any, ...]]", result)


async def execute_unread(
    conn: DbConnection, statement: Executable, parameters: _CoreAnyExecuteParams
) -> None:
    """Run a statement whose result nobody reads (no rows, no row count). On SQLite it goes with
    the transaction's next statement or its commit instead of a call of its own
    (``SqliteConnection.defer``; in an offloaded transaction, a thread hop saved); on
    PostgreSQL in one message with the transaction's next round trip
    (``PostgresConnection.defer``). A deferred failure surfaces there, and the transaction
    still commits all or nothing."""
    conn.defer(statement, parameters)
