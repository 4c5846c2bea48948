"""The :class:`Database`: a pool of psycopg connections on PostgreSQL, one writer and a few
readers on SQLite, each handing out one transaction at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy import create_engine, event
from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.pool import NullPool

from consentry.storage.db.database._migrations import (
    MIGRATION_LOCK,
    SchemaNotCurrentError,
    _current_revision,
    _upgrade,
    head_revision,
)
from consentry.storage.db.database._urls import libpq_url, sqlalchemy_postgres_url
from consentry.storage.db.postgres_connection import PostgresConnection
from consentry.storage.db.postgres_pool import PostgresPool
from consentry.storage.db.sqlite_connection import SqliteConnection, SqliteWorker

__all__ = ["BUSY_TIMEOUT_SECONDS", "Database", "DbConnection"]

BUSY_TIMEOUT_SECONDS = 30.0
SQLITE_READERS = 2
"""Read connections on SQLite (WAL readers never block each other, nor wait for the writer)."""

DbConnection = PostgresConnection | SqliteConnection
"""A transaction as ``Database.read()`` and ``Database.write()`` hand it out:
``PostgresConnection`` on PostgreSQL, ``SqliteConnection`` on SQLite. The storage modules take
either."""


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
    """Owns the connections. ``read()`` and ``write()`` hand out one transaction each."""

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
        self._pool: PostgresPool | None = None
        self._lease_pool: PostgresPool | None = None
        self._sqlite_writer: SqliteWorker | None = None
        self._sqlite_lock = asyncio.Lock()
        self._sqlite_writing: asyncio.Task[Any] | None = None
        """The task holding the write transaction (``_sqlite_lock``)."""
        self._sqlite_readers: asyncio.Queue[SqliteWorker] = asyncio.Queue()
        self._sqlite_workers: list[SqliteWorker] = []
        self._local_listeners: list[Callable[[str, str], None]] = []
        if url.startswith("sqlite:///"):
            self.dialect = "sqlite"
            # Its folder must exist: ``database_check`` creates one under ``data/`` only.
            path = Path(url.removeprefix("sqlite:///"))
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
            self._url = url
            dialect: Dialect = PGDialect_psycopg()  # type: ignore[no-untyped-call]
            self._pool = PostgresPool(
                libpq_url(url), dialect, max_size=3 * pool_size, timeout=pool_timeout
            )
            # The lease heartbeat's own connection: under a load that keeps every pooled
            # connection busy, a heartbeat waiting in that queue would let the process's leases
            # expire (and its runs be taken over) while they make progress.
            self._lease_pool = PostgresPool(
                libpq_url(url), dialect, max_size=1, timeout=pool_timeout
            )

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"

    async def open(self) -> None:
        """Start SQLite's connection threads. PostgreSQL's pools connect on first use; here
        SQLAlchemy's dialect, which compiles the statements, learns the server on a connection
        of its own."""
        if self._pool is not None and self._lease_pool is not None:
            async with self._sqlalchemy_connection() as conn:  # the dialect, initialized
                self._pool.dialect = self._lease_pool.dialect = conn.dialect
        for worker in self._sqlite_workers:
            await worker.start()
        for worker in self._sqlite_workers[1:]:
            self._sqlite_readers.put_nowait(worker)

    def read(self, *, offload: bool = False) -> AbstractAsyncContextManager[DbConnection]:
        """A read transaction. ``offload``: on SQLite its statements run on the connection's
        thread, not the loop's (for a read long enough to hold up every stream: see
        ``sqlite_connection``); PostgreSQL's are always awaited."""
        if self._pool is not None:
            # No BEGIN: under READ COMMITTED each statement sees what it would in a transaction
            # (``postgres_connection``). A read never writes (SQLite's readers enforce it). The
            # pool's own block, not one around it: a transaction's every layer costs.
            return self._pool.transaction(read=True)
        return self._sqlite_read(offload)

    @asynccontextmanager
    async def _sqlite_read(self, offload: bool) -> AsyncIterator[DbConnection]:
        worker = await self._sqlite_readers.get()
        try:
            async with _sqlite_transaction(worker, offload) as conn:
                yield conn
        finally:
            self._sqlite_readers.put_nowait(worker)

    def write(self, *, offload: bool = False) -> AbstractAsyncContextManager[DbConnection]:
        """A write transaction (on SQLite one at a time in the process). ``offload``: as for
        :meth:`read`, for the migrations and the retention sweeps."""
        if self._pool is not None:
            return self._pool.transaction()
        return self._sqlite_write(offload)

    @asynccontextmanager
    async def _sqlite_write(self, offload: bool) -> AsyncIterator[DbConnection]:
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
        if self._lease_pool is None:
            async with self.write() as conn:
                yield conn
            return
        async with self._lease_pool.transaction() as conn:
            yield conn

    def committed_with_its_last_statement(self, conn: DbConnection) -> bool:
        """Whether ``conn``'s transaction was already committed in the message of its last
        statement (PostgreSQL: ``run_on(…, commit=True)``); on SQLite never (it commits when its
        block ends)."""
        return isinstance(conn, PostgresConnection) and conn.committed

    def listen_locally(self, listener: Callable[[str, str], None]) -> None:
        """On SQLite: ``listener(channel, payload)`` for each ``notify_at_commit`` of this process,
        once its transaction committed (PostgreSQL delivers them by ``LISTEN``)."""
        self._local_listeners.append(listener)

    async def ping(self) -> None:
        async with self.read() as conn:
            await conn.exec_driver_sql("SELECT 1")

    async def migrate(self) -> None:
        """Bring the schema to the newest migration (idempotent; one process at a time)."""
        if self.is_postgres:
            async with self._sqlalchemy_connection() as conn, conn.begin():
                # DDL is transactional on PostgreSQL: a replica that waited here finds the
                # schema current and does nothing.
                await conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
                await conn.run_sync(_upgrade)
            return
        async with self.write(offload=True) as sqlite_conn:
            assert isinstance(sqlite_conn, SqliteConnection)
            await sqlite_conn.run_sync(_upgrade)

    async def schema_revision(self) -> str | None:
        """The migration the database is at (None before the first)."""
        async with self.read() as conn:
            if isinstance(conn, SqliteConnection):
                return await conn.run_sync(_current_revision)
            # alembic's own reading of it, on the pool (readiness asks it at every probe)
            if not await conn.scalar(sa.text("SELECT to_regclass('alembic_version') IS NOT NULL")):
                return None
            found = await conn.scalar(sa.text("SELECT version_num FROM alembic_version"))
            return str(found) if found is not None else None

    @asynccontextmanager
    async def _sqlalchemy_connection(self) -> AsyncIterator[AsyncConnection]:
        """PostgreSQL: a connection of SQLAlchemy's own, for what needs its execution (alembic's
        migrations) and to learn the server (its dialect); closed after."""
        engine = create_async_engine(
            sqlalchemy_postgres_url(self._url),
            poolclass=NullPool,
            connect_args={"prepare_threshold": None},
            hide_parameters=True,  # errors never carry a message's or a note's text
        )
        try:
            async with engine.connect() as conn:
                yield conn
        finally:
            await engine.dispose()

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
        if self._lease_pool is not None:
            await self._lease_pool.close()
        if self._pool is not None:
            await self._pool.close()
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
