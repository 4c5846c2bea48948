"""LangGraph's checkpointer, opened once per process on the same database as the app tables.

SQLite: LangGraph's ``SqliteSaver`` on its own connection thread with our busy timeout
(``sqlite_saver``). PostgreSQL: ``AsyncPostgresSaver`` on a psycopg pool whose connections are
``autocommit=True, prepare_threshold=0, row_factory=dict_row`` (without autocommit its writes stay
invisible to other connections); its ``setup()`` runs under an advisory lock, so replicas
starting at once create its tables once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from consentry.storage.database import BUSY_TIMEOUT_SECONDS, MIGRATION_LOCK, libpq_url
from consentry.storage.idle_checks import IdleConnectionCheck
from consentry.storage.sqlite_saver import ThreadedSqliteSaver

__all__ = ["open_checkpointer"]

CHECKPOINTER_LOCK = MIGRATION_LOCK + 1
"""The advisory lock key of LangGraph's checkpointer setup (not the migrations': a replica
migrating must not wait on one setting up the checkpointer, see ``_postgres_saver``)."""
SETUP_LOCK_RETRY_SECONDS = 0.1


async def _try_lock(conn: Any) -> bool:
    cursor = await conn.execute("SELECT pg_try_advisory_lock(%s)", (CHECKPOINTER_LOCK,))
    row = await cursor.fetchone()
    return bool(row[0])


@asynccontextmanager
async def open_checkpointer(
    database_url: str, *, pool_size: int = 10
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    if database_url.startswith("sqlite:///"):
        async with _sqlite_saver(database_url.removeprefix("sqlite:///")) as saver:
            yield saver
    else:
        async with _postgres_saver(libpq_url(database_url), pool_size=pool_size) as saver:
            yield saver


@asynccontextmanager
async def _sqlite_saver(path: str) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    saver = await ThreadedSqliteSaver.open(path, timeout_seconds=BUSY_TIMEOUT_SECONDS)
    try:
        yield saver
    finally:
        await saver.close()


@asynccontextmanager
async def _postgres_saver(dsn: str, *, pool_size: int) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg import AsyncConnection
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    idle_check = IdleConnectionCheck()
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn,
        min_size=1,
        max_size=pool_size,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        # A connection broken by a database restart is replaced before a run gets it (checked
        # when it sat idle: not a round trip per checkpointer call).
        check=idle_check.check,
        reset=idle_check.reset,
        open=False,
    )
    await pool.open(wait=True)
    try:
        saver = AsyncPostgresSaver(pool)
        async with await AsyncConnection.connect(dsn, autocommit=True) as lock:
            # Wait for the lock between tries, idle: a replica blocked inside a statement would
            # make the holder's `CREATE INDEX CONCURRENTLY` (in setup) wait for it, forever.
            while not await _try_lock(lock):  # noqa: ASYNC110 (another process holds it)
                await asyncio.sleep(SETUP_LOCK_RETRY_SECONDS)
            try:
                await saver.setup()
            finally:
                await lock.execute("SELECT pg_advisory_unlock(%s)", (CHECKPOINTER_LOCK,))
        yield saver
    finally:
        await pool.close()
