"""``ConsentrySaver``'s synchronous methods (for code that runs a graph with ``invoke``): each
operation a transaction of its own on a connection of their own (``_sync_connection``), opened on
first use and held under a lock. Nothing here is fenced or batched."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from consentry.storage.checkpoints import _operations as ops
from consentry.storage.checkpoints._operations import Operation
from consentry.storage.checkpoints._pending import put_task_writes
from consentry.storage.checkpoints._serialized import saved_config, serialized
from consentry.storage.checkpoints._sql import CheckpointSql
from consentry.storage.checkpoints._sync_connection import (
    SyncConnection,
    connect_sync,
    run_in_transaction,
)

__all__ = ["SyncMethods"]


class SyncMethods:
    """The synchronous half of the saver (``ConsentrySaver`` sets the fields, and calls
    :meth:`_init_sync`)."""

    _sql: CheckpointSql
    serde: SerializerProtocol
    _get_tuple: Callable[[RunnableConfig], Operation]
    _get_rows: Callable[[RunnableConfig], Operation]

    def _init_sync(self, dialect: str, database_url: str) -> None:
        self._sync_dialect = dialect
        self._database_url = database_url
        self._sync_lock = threading.Lock()
        self._sync_conn: SyncConnection | None = None

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return cast(CheckpointTuple | None, self._run_sync(self._get_tuple(config)))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        operation = ops.list_tuples(
            self._sql, self.serde, config, filter=filter, before=before, limit=limit
        )
        found: list[CheckpointTuple] = self._run_sync(operation)
        yield from found

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved = serialized(self.serde, config, checkpoint, metadata)
        self._run_sync(ops.put_checkpoint(self._sql, saved, fence=None, latest_only=False))
        return saved_config(saved)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        put = put_task_writes(self._sql, self.serde, config, writes, task_id, task_path, fence=None)
        self._run_sync(put)

    def delete_thread(self, thread_id: str) -> None:
        self._run_sync(ops.delete_thread(self._sql, str(thread_id)))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._run_sync(ops.delete_runs(self._sql, list(run_ids)))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._run_sync(ops.copy_thread(self._sql, str(source_thread_id), str(target_thread_id)))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._run_sync(ops.prune(self._sql, [str(t) for t in thread_ids], strategy=strategy))

    def _run_sync(self, operation: Operation) -> Any:
        with self._sync_lock:
            conn = self._sync_conn
            if conn is None:
                conn = self._sync_conn = connect_sync(self._sync_dialect, self._database_url)
            return run_in_transaction(conn, operation)

    def close_sync(self) -> None:
        """Close the synchronous methods' connection, if they opened one."""
        with self._sync_lock:
            if self._sync_conn is not None:
                self._sync_conn.close()
                self._sync_conn = None
