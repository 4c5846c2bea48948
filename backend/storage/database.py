"""The database: one async engine, SQLite pragmas, write transactions, and migrations at start-up.

SQLite runs in WAL mode with a 30 s busy timeout. Write transactions start with
``BEGIN IMMEDIATE`` so that two writers queue on the busy timeout instead of failing halfway
through a read-then-write transaction; read transactions stay ``BEGIN DEFERRED`` and never block.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.resources import files
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

__all__ = ["BUSY_TIMEOUT_SECONDS", "Database"]

BUSY_TIMEOUT_SECONDS = 30.0
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

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.engine: AsyncEngine = create_async_engine(
            f"sqlite+aiosqlite:///{path}", connect_args={"timeout": BUSY_TIMEOUT_SECONDS}
        )
        event.listen(self.engine.sync_engine, "connect", _on_connect)
        event.listen(self.engine.sync_engine, "begin", _on_begin)
        self._writer = self.engine.execution_options(**{_WRITE: True})

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
        """Bring the schema to the newest migration (idempotent)."""
        async with self.write() as conn:
            await conn.run_sync(_upgrade)

    async def close(self) -> None:
        await self.engine.dispose()


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(files("backend.storage") / "migrations"))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: Connection) -> None:
    command.upgrade(alembic_config(connection), "head")
