"""What the drivers raise, told apart: a duplicate key, or a database that cannot be reached."""

from __future__ import annotations

import psycopg
from sqlalchemy import exc as sa_exc

from consentry.storage.db.postgres_pool import PoolExhaustedError

__all__ = ["DATABASE_ERRORS", "is_database_unavailable", "is_duplicate_key"]

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
