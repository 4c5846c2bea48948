"""LangGraph's SQLite checkpointer on its own connection thread.

``ThreadedSqliteSaver`` is LangGraph's synchronous ``SqliteSaver``, every async method of which
runs the synchronous one on a ``SqliteThread`` that owns the connection: one hop per call.
``AsyncSqliteSaver`` does the same work through aiosqlite, which hops for each cursor operation
(execute, fetch, commit), and a run with ``durability="sync"`` waits for every one of them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from consentry.storage.sqlite_thread import SqliteThread

__all__ = ["ThreadedSqliteSaver"]


class ThreadedSqliteSaver(SqliteSaver):
    """``SqliteSaver`` with async methods, each one call on the connection's thread."""

    def __init__(self, conn: sqlite3.Connection, thread: SqliteThread) -> None:
        super().__init__(conn)
        self.thread = thread

    @classmethod
    async def open(cls, path: str, *, timeout_seconds: float) -> ThreadedSqliteSaver:
        thread = SqliteThread("sqlite-checkpointer")
        thread.start()

        def connect() -> ThreadedSqliteSaver:
            conn = sqlite3.connect(path, timeout=timeout_seconds)
            try:
                saver = cls(conn, thread)
                saver.setup()
            except BaseException:
                conn.close()
                raise
            return saver

        try:
            return await thread.call(connect)
        except BaseException:
            await thread.stop()
            raise

    async def close(self) -> None:
        self.thread.post(self.conn.close)
        await self.thread.stop()

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self.thread.call(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await self.thread.call(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for checkpoint in found:
            yield checkpoint

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self.thread.call(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self.thread.call(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self.thread.call(self.delete_thread, thread_id)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await self.thread.call(
            self.get_delta_channel_history, config=config, channels=channels
        )

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: delete every checkpoint of these threads but the newest of each
        namespace, and the pending writes of those deleted (each SQLite checkpoint holds its whole
        state, so the newest one alone resumes). Not for graphs with a ``DeltaChannel``, whose
        checkpoints hold only changes (the executor does not prune those). ``delete``: delete
        the threads' checkpoints."""
        if strategy == "delete":
            for thread_id in thread_ids:
                self.delete_thread(thread_id)
            return
        if strategy != "keep_latest":
            raise ValueError(f"Unknown prune strategy: {strategy!r}")
        with self.cursor() as cur:
            for thread_id in thread_ids:
                for table in ("writes", "checkpoints"):
                    cur.execute(_PRUNE_OLDER.format(table=table), (thread_id,))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self.thread.call(self.prune, thread_ids, strategy=strategy)


# Checkpoint ids sort by time (LangGraph lists them ``ORDER BY checkpoint_id DESC``).
_PRUNE_OLDER = """DELETE FROM {table} WHERE thread_id = ? AND checkpoint_id < (
    SELECT MAX(newest.checkpoint_id) FROM checkpoints AS newest
    WHERE newest.thread_id = {table}.thread_id AND newest.checkpoint_ns = {table}.checkpoint_ns
)"""
