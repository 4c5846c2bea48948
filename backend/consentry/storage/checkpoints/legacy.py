"""Threads checkpointed before Consentry had its own checkpointer, copied over once.

Up to migration 0020 the server kept LangGraph's checkpoints in LangGraph's own tables:
``SqliteSaver``'s ``checkpoints`` / ``writes`` on SQLite, ``AsyncPostgresSaver``'s
``checkpoints`` / ``checkpoint_blobs`` / ``checkpoint_writes`` on PostgreSQL. At start-up, when
those tables exist and were not copied yet, every checkpoint with its pending writes is read
through that same saver (so its format is read by the code that wrote it) and written to
``graph_checkpoints`` / ``graph_checkpoint_writes`` with its id, parent and metadata, in one
transaction that also records the copy (``legacy_checkpoint_imports``). A thread paused on a
consent then resumes from the same checkpoint with the same pending interrupt. The old tables are
left as they were (nothing is deleted); drop them once the upgrade is behind you.

Replicas starting together copy once: on PostgreSQL the copy holds the migrations' advisory lock.
A task's ``task_path`` is not kept by LangGraph's readers: copied writes sort by task id.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from consentry.storage.checkpoints._drivers import run_on
from consentry.storage.checkpoints._saver import ConsentrySaver
from consentry.storage.db.database import MIGRATION_LOCK, Database, DbConnection, libpq_url

__all__ = ["import_legacy_checkpoints"]

log = logging.getLogger(__name__)

_SOURCES = {"sqlite": "langgraph-sqlite", "postgresql": "langgraph-postgres"}


async def import_legacy_checkpoints(db: Database, saver: ConsentrySaver, database_url: str) -> int:
    """Copy the checkpoints of LangGraph's tables once (see the module); how many were copied
    now (0 when there are none, or they were copied before)."""
    source = _SOURCES[db.dialect]
    async with db.write(offload=True) as conn:  # the whole copy: off the loop's thread
        if db.is_postgres:
            await conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
        if not await _has_legacy_tables(conn, db.dialect):
            return 0
        done = await conn.exec_driver_sql(
            "SELECT 1 FROM legacy_checkpoint_imports WHERE source = "
            + ("%(source)s" if db.is_postgres else ":source"),
            {"source": source},
        )
        if done.first() is not None:
            return 0
        async with _legacy_saver(db.dialect, database_url) as legacy:
            found = [checkpoint async for checkpoint in legacy.alist(None)]
        # Oldest first: a parent before its children (ids sort by time).
        found.sort(key=lambda t: str(t.config["configurable"]["checkpoint_id"]))
        for checkpoint in found:
            await run_on(conn, saver.copy_in(checkpoint))
        await conn.exec_driver_sql(
            "INSERT INTO legacy_checkpoint_imports (source, checkpoints, imported_at) VALUES "
            + ("(%(source)s, %(n)s, %(at)s)" if db.is_postgres else "(:source, :n, :at)"),
            {"source": source, "n": len(found), "at": datetime.now(UTC)},
        )
    if found:
        log.warning(
            "copied %d checkpoint(s) from LangGraph's tables to Consentry's checkpointer; "
            "the old tables are kept (see docs/deployment.md)",
            len(found),
        )
    return len(found)


async def _has_legacy_tables(conn: DbConnection, dialect: str) -> bool:
    if dialect == "sqlite":
        found = await conn.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
            "AND name IN ('checkpoints', 'writes')"
        )
        return int(found.scalar_one()) == 2
    found = await conn.exec_driver_sql(
        "SELECT to_regclass('checkpoints') IS NOT NULL AND to_regclass('checkpoint_writes') "
        "IS NOT NULL AND to_regclass('checkpoint_blobs') IS NOT NULL"
    )
    return bool(found.scalar_one())


@asynccontextmanager
async def _legacy_saver(dialect: str, database_url: str) -> AsyncIterator[Any]:
    if dialect == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = database_url.removeprefix("sqlite:///")
        async with AsyncSqliteSaver.from_conn_string(path) as legacy:
            legacy.is_setup = True  # read only: its tables exist, nothing to create
            yield legacy
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(libpq_url(database_url)) as legacy:
        yield legacy
