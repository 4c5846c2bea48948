"""What ``ConsentrySaver`` writes and reads in the caller's transaction, for work outside a run
that holds the thread's row in that same transaction: a state update, a fork's anchor, a copy,
a prune, a thread's deletion, a run rolled back at its end. Each is a method of the saver
(mixed in), run on the caller's connection (``_drivers.run_on``), never committed here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.serde.base import SerializerProtocol

from consentry.storage.checkpoints import _operations as ops
from consentry.storage.checkpoints._drivers import run_on
from consentry.storage.checkpoints._pending import put_task_writes
from consentry.storage.checkpoints._serialized import serialized
from consentry.storage.checkpoints._sql import CheckpointSql
from consentry.storage.checkpoints._turns import fork_anchor
from consentry.storage.db.database import DbConnection

__all__ = ["InTransaction"]


class InTransaction:
    """The saver's methods in the caller's transaction (``ConsentrySaver`` sets both fields)."""

    _sql: CheckpointSql
    serde: SerializerProtocol

    async def adelete_thread_in(self, conn: DbConnection, thread_id: str) -> None:
        """Delete the thread's checkpoints in the caller's write transaction (unread: on SQLite
        with its next statement, after what it deferred before)."""
        await run_on(conn, ops.delete_thread(self._sql, str(thread_id)), unread=True)

    async def afork_in(self, conn: DbConnection, source: CheckpointTuple) -> str:
        """Write, in the caller's write transaction, a fork's anchor (``_turns.fork_anchor``)
        as the thread's newest checkpoint; its id."""
        config, anchor, metadata = fork_anchor(source)
        await self.aput_in(conn, config, anchor, metadata)
        return anchor["id"]

    async def aput_in(
        self,
        conn: DbConnection,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
    ) -> None:
        """:meth:`aput` in the caller's write transaction (a state update made apart: the
        thread's row is held by that transaction)."""
        saved = serialized(self.serde, config, checkpoint, metadata)
        put = ops.put_checkpoint(self._sql, saved, fence=None, latest_only=False)
        await run_on(conn, put, unread=True)

    async def aput_writes_in(
        self,
        conn: DbConnection,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """:meth:`aput_writes` in the caller's write transaction, as it is."""
        put = put_task_writes(self._sql, self.serde, config, writes, task_id, task_path, fence=None)
        await run_on(conn, put, unread=True)

    async def ahead_id_in(self, conn: DbConnection, thread_id: str) -> str | None:
        """The id of the thread's newest checkpoint (no state read), in the caller's
        transaction."""
        return cast(str | None, await run_on(conn, ops.head_id(self._sql, thread_id)))

    async def aprune_in(self, conn: DbConnection, thread_id: str) -> None:
        """:meth:`aprune` (``keep_latest``) of one thread in the caller's write transaction."""
        await run_on(conn, ops.prune(self._sql, [thread_id], strategy="keep_latest"), unread=True)

    async def acopy_thread_in(self, conn: DbConnection, source: str, target: str) -> None:
        """:meth:`acopy_thread` in the caller's write transaction."""
        await run_on(conn, ops.copy_thread(self._sql, source, target), unread=True)

    async def aget_tuple_in(
        self, conn: DbConnection, thread_id: str, checkpoint_id: str
    ) -> CheckpointTuple | None:
        """One checkpoint of the thread's root graph, in the caller's transaction."""
        found = await run_on(
            conn,
            ops.get_tuple(
                self._sql,
                self.serde,
                thread_id=thread_id,
                checkpoint_ns="",
                checkpoint_id=checkpoint_id,
            ),
        )
        return cast(CheckpointTuple | None, found)

    async def arun_checkpoints_in(
        self, conn: DbConnection, thread_id: str, run_id: str
    ) -> list[tuple[str, str | None]]:
        """``(checkpoint_id, parent_checkpoint_id)`` of what the run wrote of the thread's root
        graph, oldest first, in the caller's transaction."""
        found = await run_on(conn, ops.run_checkpoints(self._sql, thread_id, run_id))
        return cast(list[tuple[str, str | None]], found)

    async def adelete_run_in(self, conn: DbConnection, thread_id: str, run_id: str) -> None:
        """Delete what the run wrote of the thread (every namespace's checkpoints and their
        pending writes), in the caller's write transaction."""
        await run_on(conn, ops.delete_thread_run(self._sql, thread_id, run_id), unread=True)
