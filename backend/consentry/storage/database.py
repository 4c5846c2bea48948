"""The database: one async engine, write transactions, and migrations at start-up.

Two backends, one code path:

- **SQLite** (the default, a file under ``data/``) runs in WAL mode with a 30 s busy timeout, on
  connections that each belong to one thread (``sqlite_connection``): one writer, taken by one
  write transaction at a time, and a few readers. Write transactions start with
  ``BEGIN IMMEDIATE``, so a writer of another process waits on the busy timeout instead of
  failing halfway through a read-then-write transaction; read transactions stay
  ``BEGIN DEFERRED`` and never block.
- **PostgreSQL** (``postgresql://…``, for several replicas) through psycopg 3, ``READ COMMITTED``.
  Every cross-request invariant is a single-statement compare-and-set or an
  ``INSERT … ON CONFLICT``, so it holds there as on SQLite. Migrations take an advisory lock, so
  replicas booting at once against an empty database migrate it once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal, cast

import psycopg
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from psycopg_pool import PoolTimeout
from sqlalchemy import create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, CursorResult
from sqlalchemy.engine.interfaces import _CoreAnyExecuteParams
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.sql.base import Executable

from consentry.storage.direct import (
    committed_on_postgres,
    defer_on_postgres,
    defer_sql_on_postgres,
    install_postgres_deferral,
    run_direct_on_postgres,
)
from consentry.storage.idle_checks import check_idle_connections
from consentry.storage.postgres_transactions import postgres_transaction
from consentry.storage.sqlite_connection import SqliteConnection, SqliteWorker

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
    "is_database_unavailable",
    "is_duplicate_key",
    "notify_at_commit",
]

BUSY_TIMEOUT_SECONDS = 30.0
MIGRATION_LOCK = 0x636F6E73656E7472  # "consentr": the advisory lock key of schema changes
SQLITE_READERS = 2
"""Read connections on SQLite (WAL readers never block each other, nor wait for the writer)."""

DbConnection = AsyncConnection | SqliteConnection
"""A transaction as ``Database.read()`` and ``Database.write()`` hand it out: SQLAlchemy's on
PostgreSQL, ``SqliteConnection`` on SQLite. The storage modules take either."""


_NOTIFY = "SELECT pg_notify(%(channel)s, %(payload)s)"


async def notify_at_commit(conn: DbConnection, channel: str, payload: str) -> None:
    """Tell the listeners of ``channel`` (``runtime.notifications``) once the caller's transaction
    commits, and not if it rolls back: PostgreSQL's ``NOTIFY``, which every process listening
    gets (repeats in one transaction are folded into one; the ``pg_notify`` goes with the
    transaction's next round trip); on SQLite, where one process serves the file, that process's
    own listeners, right after the commit."""
    if isinstance(conn, SqliteConnection):
        if (channel, payload) not in conn.notices:
            conn.notices.append((channel, payload))
    elif not defer_sql_on_postgres(conn, _NOTIFY, {"channel": channel, "payload": payload}):
        await conn.execute(sa.select(sa.func.pg_notify(channel, payload)))


async def execute(
    conn: DbConnection, statement: Executable, parameters: _CoreAnyExecuteParams
) -> CursorResult[*tuple[Any, ...]]:
    """Run a statement whose result is read (its rows, its row count). A statement marked
    ``direct`` runs on the driver, past SQLAlchemy's execution: on SQLite as every statement of a
    ``SqliteConnection`` does; on PostgreSQL in one message with what the transaction deferred
    (``direct.run_direct_on_postgres``), without the async engine's greenlet bridge. Either way
    the result is read as SQLAlchemy's (``direct.BufferedResult``: its rows, its row count)."""
    result: Any = None
    if isinstance(conn, AsyncConnection) and isinstance(parameters, Mapping):
        result = await run_direct_on_postgres(conn, statement, parameters)
    if result is None:
        result = await conn.execute(statement, parameters)
    return cast("CursorResult[*tuple[Any, ...]]", result)


async def execute_unread(
    conn: DbConnection, statement: Executable, parameters: _CoreAnyExecuteParams
) -> None:
    """Run a statement whose result nobody reads (no rows, no row count). On SQLite it goes with
    the transaction's next statement or its commit instead of a call of its own
    (``SqliteConnection.defer``; in an offloaded transaction, a thread hop saved); on
    PostgreSQL a statement marked ``direct`` goes in one message with the transaction's next
    round trip (``direct.defer_on_postgres``), any other is run at once. A deferred failure
    surfaces there, and the transaction still commits all or nothing."""
    if isinstance(conn, SqliteConnection):
        conn.defer(statement, parameters)
    elif not defer_on_postgres(conn, statement, parameters):
        await conn.execute(statement, parameters)


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Transactions begin with our own BEGIN (``SqliteWorker.in_transaction``): pysqlite's
    # implicit one comes too late (at the first write) to protect a read-then-write transaction.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_SECONDS * 1000)}")
    cursor.close()


class Database:
    """Owns the engine. ``read()`` and ``write()`` hand out one transaction each."""

    def __init__(self, url: str, *, pool_size: int = 10, pool_timeout: float = 60.0) -> None:
        """``url``: ``sqlite:///<path>`` or ``postgresql://…`` (``CONSENTRY_DATABASE_URL``).
        PostgreSQL: up to three times ``pool_size`` connections, opened as the load needs them
        and kept once opened (the checkpointer's statements share this pool: a step's checkpoint
        goes in its events' transaction). Connections opened beyond a kept number and closed when
        returned cost more than the conversations they served: at 100 concurrent conversations,
        3.2 new connections a conversation and half again the CPU. A transaction that waits
        ``pool_timeout`` seconds for one fails as ``is_database_unavailable`` (503
        ``database_unavailable``, a retryable run error)."""
        self.dialect: Literal["sqlite", "postgresql"]
        self._engine: AsyncEngine | None = None
        self._lease_engine: AsyncEngine | None = None
        self._sqlite_writer: SqliteWorker | None = None
        self._sqlite_lock = asyncio.Lock()
        self._sqlite_writing: asyncio.Task[Any] | None = None
        """The task holding the write transaction (``_sqlite_lock``)."""
        self._sqlite_readers: asyncio.Queue[SqliteWorker] = asyncio.Queue()
        self._sqlite_workers: list[SqliteWorker] = []
        self._local_listeners: list[Callable[[str, str], None]] = []
        if url.startswith("sqlite:///"):
            self.dialect = "sqlite"
            path = Path(url.removeprefix("sqlite:///"))
            path.parent.mkdir(parents=True, exist_ok=True)
            # Each worker holds its connection for the process's life: no pool to check out of.
            # A connection serves its transactions on the loop's thread or on its own
            # (``sqlite_connection``), one at a time: it is not bound to the thread that opened it.
            engine = create_engine(
                f"sqlite:///{path}",
                connect_args={"timeout": BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
                poolclass=NullPool,
            )
            event.listen(engine, "connect", _on_connect)
            busy_ms = int(BUSY_TIMEOUT_SECONDS * 1000)
            self._sqlite_writer = SqliteWorker(
                engine, name="sqlite-writer", write=True, busy_timeout_ms=busy_ms
            )
            self._sqlite_workers = [self._sqlite_writer] + [
                SqliteWorker(
                    engine, name=f"sqlite-reader-{n}", write=False, busy_timeout_ms=busy_ms
                )
                for n in range(SQLITE_READERS)
            ]
        else:
            self.dialect = "postgresql"
            self._engine = create_async_engine(
                sqlalchemy_postgres_url(url),
                pool_size=3 * pool_size,
                max_overflow=0,
                pool_timeout=pool_timeout,
                connect_args={"prepare_threshold": None},
                hide_parameters=True,  # errors never carry a message's or a note's text
            )
            check_idle_connections(self._engine)  # not a ping per transaction
            install_postgres_deferral(self._engine.sync_engine)
            # The lease heartbeat's own connection: under a load that keeps every pooled
            # connection busy, a heartbeat waiting in that queue would let the process's leases
            # expire (and its runs be taken over) while they make progress.
            self._lease_engine = create_async_engine(
                sqlalchemy_postgres_url(url),
                pool_size=1,
                max_overflow=0,
                pool_timeout=pool_timeout,
                connect_args={"prepare_threshold": None},
                hide_parameters=True,
            )
            check_idle_connections(self._lease_engine)
            install_postgres_deferral(self._lease_engine.sync_engine)

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    async def open(self) -> None:
        """Start SQLite's connection threads (PostgreSQL's pool connects on first use)."""
        for worker in self._sqlite_workers:
            await worker.start()
        for worker in self._sqlite_workers[1:]:
            self._sqlite_readers.put_nowait(worker)

    @asynccontextmanager
    async def read(self, *, offload: bool = False) -> AsyncIterator[DbConnection]:
        """A read transaction. ``offload``: on SQLite its statements run on the connection's
        thread, not the loop's (for a read long enough to hold up every stream: see
        ``sqlite_connection``); PostgreSQL's are always awaited."""
        if self._engine is not None:
            # No BEGIN: under READ COMMITTED each statement sees what it would in a transaction
            # (``direct.NO_TRANSACTION``). A read never writes (SQLite's readers enforce it).
            async with postgres_transaction(self._engine, read=True) as conn:
                yield conn
            return
        worker = await self._sqlite_readers.get()
        try:
            async with _sqlite_transaction(worker, offload) as conn:
                yield conn
        finally:
            self._sqlite_readers.put_nowait(worker)

    @asynccontextmanager
    async def write(self, *, offload: bool = False) -> AsyncIterator[DbConnection]:
        """A write transaction (on SQLite one at a time in the process). ``offload``: as for
        :meth:`read`, for the migrations and the retention sweeps."""
        if self._engine is not None:
            async with postgres_transaction(self._engine) as conn:
                yield conn
            return
        assert self._sqlite_writer is not None
        task = asyncio.current_task()
        if task is not None and task is self._sqlite_writing:
            # It would wait for itself forever: one write transaction at a time, per process.
            raise RuntimeError("a write transaction was opened inside another one (SQLite)")
        async with self._sqlite_lock:
            self._sqlite_writing = task
            try:
                async with _sqlite_transaction(self._sqlite_writer, offload) as sqlite_conn:
                    yield sqlite_conn
            finally:
                self._sqlite_writing = None
        for channel, payload in sqlite_conn.notices:  # committed: tell this process
            for listener in self._local_listeners:
                listener(channel, payload)

    @asynccontextmanager
    async def lease_write(self) -> AsyncIterator[DbConnection]:
        """A write transaction for the lease heartbeat: on PostgreSQL on a connection of its own,
        never queued behind the pool's (on SQLite, ``write()``)."""
        if self._lease_engine is None:
            async with self.write() as conn:
                yield conn
            return
        async with postgres_transaction(self._lease_engine) as conn:
            yield conn

    def committed_with_its_last_statement(self, conn: DbConnection) -> bool:
        """Whether ``conn``'s transaction was already committed in the message of its last
        statement (PostgreSQL: ``run_on(…, commit=True)``); on SQLite never (it commits when its
        block ends)."""
        return isinstance(conn, AsyncConnection) and committed_on_postgres(conn)

    def listen_locally(self, listener: Callable[[str, str], None]) -> None:
        """On SQLite: ``listener(channel, payload)`` for each ``notify_at_commit`` of this process,
        once its transaction committed (PostgreSQL delivers them by ``LISTEN``)."""
        self._local_listeners.append(listener)

    async def ping(self) -> None:
        async with self.read() as conn:
            await conn.exec_driver_sql("SELECT 1")

    async def migrate(self) -> None:
        """Bring the schema to the newest migration (idempotent; one process at a time)."""
        async with self.write(offload=True) as conn:
            if self.is_postgres:
                # DDL is transactional on PostgreSQL: a replica that waited here finds the
                # schema current and does nothing.
                await conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            await conn.run_sync(_upgrade)

    async def schema_revision(self) -> str | None:
        """The migration the database is at (None before the first)."""
        async with self.read() as conn:
            return await conn.run_sync(_current_revision)

    async def require_current_schema(self) -> None:
        """For a server told not to migrate: refuse to start on a schema that is not current."""
        current = await self.schema_revision()
        if current != head_revision():
            raise SchemaNotCurrentError(
                f"the database schema is at {current or 'nothing'}, this Consentry needs "
                f"{head_revision()}: run `consentry db upgrade` (or start without "
                "CONSENTRY_RUN_MIGRATIONS=false)"
            )

    async def close(self) -> None:
        if self._lease_engine is not None:
            await self._lease_engine.dispose()
        if self._engine is not None:
            await self._engine.dispose()
        for worker in reversed(self._sqlite_workers):
            await worker.stop()


@asynccontextmanager
async def _sqlite_transaction(
    worker: SqliteWorker, offload: bool
) -> AsyncIterator[SqliteConnection]:
    await worker.ready()
    conn = SqliteConnection(worker, offload=offload)
    try:
        yield conn
        await conn.commit()
    except BaseException:
        conn.end_without_waiting()  # a no-op after a commit that went through
        raise


class SchemaNotCurrentError(RuntimeError):
    """The database was not migrated to this version's schema (and migrating is left to you)."""


def head_revision() -> str:
    """The newest migration this version of Consentry ships."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def _current_revision(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


DATABASE_ERRORS: tuple[type[Exception], ...] = (
    sa_exc.DBAPIError,
    sa_exc.TimeoutError,
    psycopg.Error,
    PoolTimeout,
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
    config.set_main_option("script_location", str(files("consentry.storage") / "migrations"))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")
