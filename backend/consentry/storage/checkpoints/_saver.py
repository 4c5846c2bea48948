"""``ConsentrySaver``: LangGraph's checkpointer contract on Consentry's own database and tables.

Async methods run in the app's transactions (``Database``), on the same connections as every
other write: on SQLite one call of the app's connection a method (no second connection
contending for the write lock), on PostgreSQL the app's pool. A run hands the graph a
``StepCommitter`` in its config (``RUN_KEY``): the run's checkpoint writes are then fenced by
its lease, and each checkpoint is committed in the transaction the run opens for it, with the
step's events (``StepCommitter.commit_step``). ``latest_only``
(``CONSENTRY_CHECKPOINT_RETENTION=latest``) drops the namespace's older checkpoints in that same
transaction.

The synchronous methods (for code that runs a graph with ``invoke``) use a connection of their
own, opened on first use. Nothing here is fenced or batched without a run's committer.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from typing import Any, Protocol, cast

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from consentry.storage.checkpoints import _operations as ops
from consentry.storage.checkpoints._drivers import run_on, run_on_psycopg, run_on_sqlite3
from consentry.storage.checkpoints._operations import CheckpointFence, Operation
from consentry.storage.checkpoints._sql import sql_for
from consentry.storage.database import BUSY_TIMEOUT_SECONDS, Database, DbConnection, libpq_url

__all__ = ["RUN_KEY", "ConsentrySaver", "StepCommitter"]

WriteRow = tuple[Any, ...]
"""A pending write as stored: thread, namespace, checkpoint, task, path, index, channel, value."""
WriteRows = list[WriteRow]

RUN_KEY = "__consentry_run__"
"""The ``configurable`` key of a run's ``StepCommitter`` (``__``-prefixed: LangGraph keeps it out
of the checkpoint's metadata)."""


class StepCommitter(Protocol):
    """What a run gives its checkpoint writes: its lease, and the transaction of its steps."""

    fence: CheckpointFence
    latest_only: bool
    new_thread: bool
    """The run's thread was created with the run: until the run writes, the thread has no
    checkpoint to read (the saver answers without a read, and clears it at the run's first
    write)."""

    async def commit_step(self, write: Callable[[DbConnection], Awaitable[None]]) -> None:
        """Open the step's write transaction, ``write(conn)`` the checkpoint in it, add what else
        the step stored, and commit. The checkpoint is fenced: when the lease moved on,
        ``LeaseLostError`` is raised, by ``write`` or (SQLite, where the writes go with the
        transaction's next hop) by the next statement or the commit, and nothing is stored."""


class ConsentrySaver(BaseCheckpointSaver[str]):
    def __init__(
        self, db: Database, *, database_url: str, serde: SerializerProtocol | None = None
    ) -> None:
        super().__init__(serde=serde)
        self._db = db
        self._sql = sql_for(db.dialect)
        self._database_url = database_url
        self._sync_lock = threading.Lock()
        self._sync_conn: sqlite3.Connection | psycopg.Connection[Any] | None = None
        self._held: weakref.WeakKeyDictionary[StepCommitter, dict[str, WriteRows]] = (
            weakref.WeakKeyDictionary()
        )
        """A run's pending writes of ordinary channels, by namespace, not written yet: see
        :meth:`aput_writes`."""

    # -- async: the server's ------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        run: StepCommitter | None = config["configurable"].get(RUN_KEY)
        if (
            run is not None
            and run.new_thread
            and config["configurable"].get("thread_id") == run.fence.thread_id
        ):
            return None  # a thread created with its run: nothing to read before it writes
        async with self._db.read() as conn:
            return cast(CheckpointTuple | None, await run_on(conn, self._get_tuple(config)))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        operation = ops.list_tuples(
            self._sql, self.serde, config, filter=filter, before=before, limit=limit
        )
        async with self._db.read() as conn:
            found: list[CheckpointTuple] = await run_on(conn, operation)
        for checkpoint in found:
            yield checkpoint

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        saved = self._serialized(config, checkpoint, metadata)
        run: StepCommitter | None = config["configurable"].get(RUN_KEY)
        if run is None:
            await self._write(ops.put_checkpoint(self._sql, saved, fence=None, latest_only=False))
            return _saved_config(saved)
        run.new_thread = False  # from now on, its checkpoints are read
        # The step's tasks' writes: replaced by this checkpoint, kept only with every checkpoint.
        held = self._held.get(run, {}).pop(saved.checkpoint_ns, [])
        if run.latest_only:
            held = []

        async def write(conn: DbConnection) -> None:
            # Unread: on SQLite the step's whole transaction is then one hop (its commit's). The
            # last write of the step's transaction (its events went before it): on PostgreSQL
            # the transaction commits in the same message, unless held writes follow.
            put = ops.put_checkpoint(self._sql, saved, fence=run.fence, latest_only=run.latest_only)
            await run_on(conn, put, unread=True, commit=not held)
            if held:
                writes = ops.put_held_writes(self._sql, held, fence=None)
                await run_on(conn, writes, unread=True)

        await run.commit_step(write)
        return _saved_config(saved)

    async def acommit_held(self, run: StepCommitter) -> None:
        """Write the run's held pending writes (its graph stopped in a step: an interrupt, an
        error, a stop), in one transaction with the events the run recorded since its last
        write (``StepCommitter.commit_step``): a finished task of the unfinished step is not run
        again, and what it told is stored with what backs it."""
        held = self._held.pop(run, {})
        rows = [row for rows in held.values() for row in rows]
        if not rows:
            return

        async def write(conn: DbConnection) -> None:
            writes = ops.put_held_writes(self._sql, rows, fence=run.fence)
            await run_on(conn, writes, unread=True)

        await run.commit_step(write)

    def forget_held(self, run: StepCommitter) -> None:
        """The run stops without storing (its lease is gone, or its task was cancelled)."""
        self._held.pop(run, None)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """A run's writes of ordinary channels (a task's results) and its resume values are
        held, not written: the step's checkpoint, which replaces them, commits them with it (or,
        with retention ``latest``, drops them); a step that does not finish gets them written by
        :meth:`acommit_held`. A resume value is the run's own input, recorded with the run
        (``runs.inputs``) and the decision (``approvals``) before the graph starts: a run that
        dies before its step's checkpoint is continued with it. An interrupt or an error is
        written at once, fenced: what the graph asks must be there before anyone answers it."""
        run: StepCommitter | None = config["configurable"].get(RUN_KEY)
        if run is not None:
            run.new_thread = False
        if run is not None and all(_holds(channel) for channel, _ in writes):
            rows = self._write_rows(config, writes, task_id, task_path)
            namespace = str(config["configurable"].get("checkpoint_ns", ""))
            self._held.setdefault(run, {}).setdefault(namespace, []).extend(rows)
            return
        await self._write(self._put_writes(config, writes, task_id, task_path, run))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._write(ops.delete_thread(self._sql, str(thread_id)))

    async def adelete_thread_in(self, conn: DbConnection, thread_id: str) -> None:
        """Delete the thread's checkpoints in the caller's write transaction (unread: on SQLite
        with its next statement, after what it deferred before)."""
        await run_on(conn, ops.delete_thread(self._sql, str(thread_id)), unread=True)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._write(ops.delete_runs(self._sql, list(run_ids)))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._write(ops.copy_thread(self._sql, str(source_thread_id), str(target_thread_id)))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._write(ops.prune(self._sql, [str(t) for t in thread_ids], strategy=strategy))

    async def _write(self, operation: Operation) -> Any:
        async with self._db.write() as conn:  # the operation is the whole transaction
            return await run_on(conn, operation, commit=True)

    # -- sync: a connection of their own --------------------------------------------------------

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
        saved = self._serialized(config, checkpoint, metadata)
        self._run_sync(ops.put_checkpoint(self._sql, saved, fence=None, latest_only=False))
        return _saved_config(saved)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._run_sync(self._put_writes(config, writes, task_id, task_path, None))

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
                conn = self._sync_conn = self._connect_sync()
            if isinstance(conn, sqlite3.Connection):
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = run_on_sqlite3(conn, operation)
                except BaseException:
                    conn.rollback()
                    raise
                conn.commit()
                return result
            with conn.transaction():
                return run_on_psycopg(conn, operation)

    def _connect_sync(self) -> sqlite3.Connection | psycopg.Connection[Any]:
        if self._db.dialect == "sqlite":
            conn = sqlite3.connect(
                self._database_url.removeprefix("sqlite:///"),
                timeout=BUSY_TIMEOUT_SECONDS,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute("PRAGMA journal_mode=WAL")
            return conn
        return psycopg.connect(libpq_url(self._database_url), autocommit=True)

    def close_sync(self) -> None:
        """Close the synchronous methods' connection, if they opened one."""
        with self._sync_lock:
            if self._sync_conn is not None:
                self._sync_conn.close()
                self._sync_conn = None

    def copy_in(self, found: CheckpointTuple) -> Operation:
        """Write a checkpoint another saver read, as it was: its id, parent, metadata and pending
        writes (``legacy``). Writes keep their order within a task; ``task_path`` is not in a
        ``CheckpointTuple`` and is left empty."""
        configurable = found.config["configurable"]
        parent = (found.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        config: RunnableConfig = {
            "configurable": {
                "thread_id": configurable["thread_id"],
                "checkpoint_ns": configurable.get("checkpoint_ns", ""),
                "checkpoint_id": parent,
            }
        }
        saved = self._serialized(config, found.checkpoint, found.metadata)
        key = (saved.thread_id, saved.checkpoint_ns, saved.checkpoint_id)
        index: dict[str, int] = {}
        rows: list[tuple[Any, ...]] = []
        for task_id, channel, value in found.pending_writes or []:
            idx = index.get(task_id, 0)
            index[task_id] = idx + 1
            type_, blob = self.serde.dumps_typed(value)
            rows.append((*key, task_id, "", WRITES_IDX_MAP.get(channel, idx), channel, type_, blob))
        yield from ops.put_checkpoint(self._sql, saved, fence=None, latest_only=False)
        yield from ops.put_writes(self._sql, rows, replace=False, fence=None)

    # -- shared -----------------------------------------------------------------------------------

    def get_next_version(self, current: str | None, channel: None) -> str:
        """``<32-digit counter>.<random>``, as LangGraph's SQL savers make them (and read theirs:
        a thread checkpointed by one of them continues here)."""
        if current is None:
            number = 0
        elif isinstance(current, int):
            number = current
        else:
            number = int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    def _get_tuple(self, config: RunnableConfig) -> Operation:
        configurable = config["configurable"]
        return ops.get_tuple(
            self._sql,
            self.serde,
            thread_id=str(configurable["thread_id"]),
            checkpoint_ns=configurable.get("checkpoint_ns", ""),
            checkpoint_id=get_checkpoint_id(config),
        )

    def _serialized(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> ops.SerializedCheckpoint:
        configurable = config["configurable"]
        type_, blob = self.serde.dumps_typed(checkpoint)
        stored = get_checkpoint_metadata(config, metadata)
        run_id = stored.get("run_id")
        return ops.SerializedCheckpoint(
            thread_id=str(configurable["thread_id"]),
            checkpoint_ns=configurable.get("checkpoint_ns", ""),
            checkpoint_id=checkpoint["id"],
            parent_checkpoint_id=configurable.get("checkpoint_id"),
            run_id=str(run_id) if run_id is not None else None,
            type=type_,
            blob=blob,
            metadata=json.dumps(stored, ensure_ascii=False, default=str),
        )

    def _put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
        run: StepCommitter | None,
    ) -> Operation:
        return ops.put_writes(
            self._sql,
            self._write_rows(config, writes, task_id, task_path),
            replace=all(channel in WRITES_IDX_MAP for channel, _ in writes),
            fence=run.fence if run is not None else None,
        )

    def _write_rows(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> WriteRows:
        configurable = config["configurable"]
        key = (
            str(configurable["thread_id"]),
            str(configurable.get("checkpoint_ns", "")),
            str(configurable["checkpoint_id"]),
        )
        return [
            (*key, task_id, task_path, WRITES_IDX_MAP.get(channel, idx), channel, *dumped)
            for idx, (channel, value) in enumerate(writes)
            for dumped in (self.serde.dumps_typed(value),)
        ]


_RESUME = "__resume__"
"""LangGraph's channel of resume values (one of its special channels)."""
assert _RESUME in WRITES_IDX_MAP, "LangGraph renamed its resume channel"


def _holds(channel: str) -> bool:
    """Whether a run's write of ``channel`` is held (``ConsentrySaver.aput_writes``)."""
    return channel not in WRITES_IDX_MAP or channel == _RESUME


def _saved_config(saved: ops.SerializedCheckpoint) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": saved.thread_id,
            "checkpoint_ns": saved.checkpoint_ns,
            "checkpoint_id": saved.checkpoint_id,
        }
    }
