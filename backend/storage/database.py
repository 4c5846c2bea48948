"""The database: one async engine, write transactions, and migrations at start-up.

Two backends, one code path:

- **SQLite** (the default, a file under ``data/``) runs in WAL mode with a 30 s busy timeout.
  Write transactions start with ``BEGIN IMMEDIATE`` so that two writers queue on the busy timeout
  instead of failing halfway through a read-then-write transaction; read transactions stay
  ``BEGIN DEFERRED`` and never block.
- **PostgreSQL** (``postgresql://…``, for several replicas) through psycopg 3, ``READ COMMITTED``.
  Every cross-request invariant is a single-statement compare-and-set or an
  ``INSERT … ON CONFLICT``, so it holds there as on SQLite. Migrations take an advisory lock, so
  replicas booting at once against an empty database migrate it once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

import psycopg
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from psycopg_pool import PoolTimeout
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "DATABASE_ERRORS",
    "MIGRATION_LOCK",
    "Database",
    "SchemaNotCurrentError",
    "head_revision",
    "is_database_unavailable",
]

BUSY_TIMEOUT_SECONDS = 30.0
MIGRATION_LOCK = 0x636F6E73656E7472  # "consentr": the advisory lock key of schema changes
_WRITE = "consentry_write"


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy's "begin" hook below issue BEGIN itself (pysqlite's own is too late/lazy).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_SECONDS * 1000)}")
    cursor.close()


def _on_begin(connection: Connection) -> None:
    immediate = connection.get_execution_options().get(_WRITE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


class Database:
    """Owns the engine. ``read()`` and ``write()`` hand out one transaction each."""

    def __init__(self, url: str, *, pool_size: int = 10) -> None:
        """``url``: ``sqlite:///<path>`` or ``postgresql://…`` (``CONSENTRY_DATABASE_URL``)."""
        self.dialect: Literal["sqlite", "postgresql"]
        if url.startswith("sqlite:///"):
            self.dialect = "sqlite"
            path = Path(url.removeprefix("sqlite:///"))
            path.parent.mkdir(parents=True, exist_ok=True)
            self.engine: AsyncEngine = create_async_engine(
                f"sqlite+aiosqlite:///{path}",
                connect_args={"timeout": BUSY_TIMEOUT_SECONDS},
                pool_reset_on_return=None,
            )
            event.listen(self.engine.sync_engine, "connect", _on_connect)
            event.listen(self.engine.sync_engine, "begin", _on_begin)
        else:
            self.dialect = "postgresql"
            self.engine = create_async_engine(
                sqlalchemy_postgres_url(url),
                pool_size=pool_size,
                max_overflow=pool_size,
                pool_pre_ping=True,
                connect_args={"prepare_threshold": None},
            )
        self._writer = self.engine.execution_options(**{_WRITE: True})

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.begin() as conn:
            yield conn

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        async with self._writer.begin() as conn:
            yield conn

    async def ping(self) -> None:
        async with self.read() as conn:
            await conn.exec_driver_sql("SELECT 1")

    async def migrate(self) -> None:
        """Bring the schema to the newest migration (idempotent; one process at a time)."""
        async with self.write() as conn:
            if self.is_postgres:
                # DDL is transactional on PostgreSQL: a replica that waited here finds the
                # schema current and does nothing.
                await conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            await conn.run_sync(_upgrade)

    async def require_current_schema(self) -> None:
        """For a server told not to migrate: refuse to start on a schema that is not current."""
        async with self.read() as conn:
            current = await conn.run_sync(_current_revision)
        if current != head_revision():
            raise SchemaNotCurrentError(
                f"the database schema is at {current or 'nothing'}, this Consentry needs "
                f"{head_revision()}: run `consentry db upgrade` (or start without "
                "CONSENTRY_RUN_MIGRATIONS=false)"
            )

    async def close(self) -> None:
        await self.engine.dispose()


class SchemaNotCurrentError(RuntimeError):
    """The database was not migrated to this version's schema (and migrating is left to you)."""


def head_revision() -> str:
    """The newest migration this version of Consentry ships."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def _current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


DATABASE_ERRORS: tuple[type[Exception], ...] = (sa_exc.DBAPIError, psycopg.Error, PoolTimeout)
"""What the drivers raise; :func:`is_database_unavailable` tells an outage from a bug."""


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
            | psycopg.OperationalError
            | PoolTimeout
            | ConnectionError,
        ):
            return True
        current = current.__cause__ or current.__context__
    return False


def sqlalchemy_postgres_url(url: str) -> str:
    """``postgresql://…`` (libpq form) → the SQLAlchemy URL for psycopg 3."""
    scheme, _, rest = url.partition("://")
    return f"postgresql+psycopg://{rest}" if scheme in ("postgresql", "postgres") else url


def libpq_url(url: str) -> str:
    """The SQLAlchemy form back to what libpq (psycopg's pool, the checkpointer) accepts."""
    scheme, _, rest = url.partition("://")
    return f"postgresql://{rest}" if scheme.startswith("postgresql+") else url


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(files("backend.storage") / "migrations"))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")
