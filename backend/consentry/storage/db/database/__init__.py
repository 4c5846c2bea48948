"""The database: its connections, read and write transactions, and migrations at start-up.

Two backends, one set of statements, each written once with SQLAlchemy (the hot path's run on
the driver directly, past SQLAlchemy's execution, with the same SQL: ``db.direct``):

- **SQLite** (the default, a file under ``data/``) runs in WAL mode with a 30 s busy timeout, on
  connections that each belong to one thread (``sqlite_connection``): one writer, taken by one
  write transaction at a time, and a few readers. Write transactions start with
  ``BEGIN IMMEDIATE``, so a writer of another process waits on the busy timeout instead of
  failing halfway through a read-then-write transaction; read transactions stay
  ``BEGIN DEFERRED`` and never block.
- **PostgreSQL** (``postgresql://…``, for several replicas) through psycopg 3 and its pool
  (``postgres_connection``; SQLAlchemy compiles the statements and runs the migrations),
  ``READ COMMITTED``.
  Every cross-request invariant is a single-statement compare-and-set or an
  ``INSERT … ON CONFLICT``, so it holds there as on SQLite. Migrations take an advisory lock, so
  replicas booting at once against an empty database migrate it once.

Which module holds what:

- ``_database``: :class:`Database` (its connections, ``read()`` / ``write()`` / ``lease_write()``,
  migrating at start-up), :data:`DbConnection`, SQLite's connection settings
  (:data:`BUSY_TIMEOUT_SECONDS`).
- ``_statements``: running a statement in a transaction: :func:`execute` (its result read),
  :func:`execute_unread` (deferred where it can be), :func:`notify_at_commit`.
- ``_migrations``: alembic's configuration, :func:`head_revision`, the upgrade,
  :data:`MIGRATION_LOCK` and :class:`SchemaNotCurrentError`.
- ``_errors``: what the drivers raise (:data:`DATABASE_ERRORS`), told apart:
  :func:`is_duplicate_key`, :func:`is_database_unavailable`, :func:`is_connection_lost`,
  :func:`is_storage_full`, :func:`is_write_refused`.
- ``_urls``: a PostgreSQL URL in SQLAlchemy's form and in libpq's (:func:`libpq_url`).
"""

from consentry.storage.db.database._database import BUSY_TIMEOUT_SECONDS, Database, DbConnection
from consentry.storage.db.database._errors import (
    DATABASE_ERRORS,
    is_connection_lost,
    is_database_unavailable,
    is_duplicate_key,
    is_storage_full,
    is_write_refused,
)
from consentry.storage.db.database._migrations import (
    MIGRATION_LOCK,
    SchemaNotCurrentError,
    head_revision,
)
from consentry.storage.db.database._statements import execute, execute_unread, notify_at_commit
from consentry.storage.db.database._urls import libpq_url

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "DATABASE_ERRORS",
    "MIGRATION_LOCK",
    "Database",
    "DbConnection",
    "SchemaNotCurrentError",
    "execute",
    "execute_unread",
    "head_revision",
    "is_connection_lost",
    "is_database_unavailable",
    "is_duplicate_key",
    "is_storage_full",
    "is_write_refused",
    "libpq_url",
    "notify_at_commit",
]
