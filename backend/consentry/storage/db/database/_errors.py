"""What the drivers raise, told apart: a duplicate key, or a database that cannot be reached."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import psycopg
from sqlalchemy import exc as sa_exc

from consentry.storage.db.postgres_pool import PoolExhaustedError

__all__ = [
    "DATABASE_ERRORS",
    "is_connection_lost",
    "is_database_unavailable",
    "is_duplicate_key",
    "is_storage_full",
    "is_write_refused",
]

DATABASE_ERRORS: tuple[type[Exception], ...] = (
    sa_exc.DBAPIError,
    sa_exc.TimeoutError,
    psycopg.Error,
    PoolExhaustedError,
)
"""What the drivers raise; :func:`is_database_unavailable` tells an outage from a bug."""


def is_duplicate_key(exc: BaseException) -> bool:
    """Whether ``exc`` is a unique or primary key that refused a row (both databases), not
    another constraint (a foreign key, a check, a NOT NULL)."""
    if not isinstance(exc, sa_exc.IntegrityError):
        return False
    cause = exc.orig
    if isinstance(cause, psycopg.Error):
        return cause.sqlstate == "23505"  # unique_violation
    return "UNIQUE constraint failed" in str(cause)  # sqlite3's words for it


def is_database_unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the database cannot be reached or is busy past
    its timeout, rather than that a statement is wrong: the request may succeed later."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sa_exc.DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(
            current,
            sa_exc.OperationalError
            | sa_exc.InterfaceError
            | sa_exc.TimeoutError  # no pooled connection came free in time: overloaded
            | psycopg.OperationalError
            | PoolExhaustedError  # no pooled connection came free in time: overloaded
            | ConnectionError,
        ):
            return True
        current = current.__cause__ or current.__context__
    return False


_DISK_FULL = "53100"
"""PostgreSQL's disk_full: the server could not extend a file (its disk, or a quota, is full)."""


def is_storage_full(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the database could not store a write because its
    disk is full: SQLite's ``SQLITE_FULL`` (the file or its WAL could not grow), PostgreSQL's
    ``disk_full``. The transaction was rolled back, what was stored before is intact, and the
    same write succeeds once space returns (a case of :func:`is_database_unavailable`)."""
    return any(
        _sqlite_code(cause) == sqlite3.SQLITE_FULL
        or (isinstance(cause, psycopg.Error) and cause.sqlstate == _DISK_FULL)
        for cause in _causes(exc)
    )


_REFUSED_FOR_NOW = frozenset({5, 10, 13})
"""SQLite's primary result codes of a write it could not store for now: ``SQLITE_BUSY``
(another process held the file's lock past the busy timeout), ``SQLITE_IOERR`` (its disk failed a
read or write), ``SQLITE_FULL``. Not ``SQLITE_LOCKED``: a conflict inside one connection, which
would happen again the same way."""


def is_write_refused(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is SQLite refusing a write for now (its disk full,
    its file locked or failing): the transaction was rolled back, and the same write may
    succeed later. Not a statement that is wrong (SQLite reports those as operational errors
    too), which would fail the same way again."""
    return any(
        (code := _sqlite_code(cause)) is not None and code & 0xFF in _REFUSED_FOR_NOW
        for cause in _causes(exc)
    )


def _sqlite_code(exc: BaseException) -> int | None:
    """The (extended) result code of an error sqlite3 raised (one made by hand has none)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code if isinstance(code, int) else None


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then the driver's error it wraps and what caused each, once each."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        if isinstance(current, sa_exc.DBAPIError) and isinstance(current.orig, BaseException):
            current = current.orig
        else:
            current = current.__cause__ or current.__context__


_SERVER_GONE = frozenset({"57P01", "57P02", "57P03"})
"""admin_shutdown, crash_shutdown, cannot_connect_now: the server stopped, or is starting."""


def is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says the connection to PostgreSQL broke or could not
    be made (the server restarted or failed over, the network cut it): what the database holds
    of a transaction in flight is then unknown. Not a statement that failed or timed out, nor a
    pool with no connection free (the database is there, only busy)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sa_exc.DBAPIError):
            if current.connection_invalidated:
                return True
            current = current.orig if isinstance(current.orig, BaseException) else current.__cause__
            continue
        if isinstance(current, psycopg.OperationalError | psycopg.InterfaceError):
            state = current.sqlstate  # None: the client's own (a broken or refused connection)
            if state is None or state.startswith("08") or state in _SERVER_GONE:
                return True
        current = current.__cause__ or current.__context__
    return False
