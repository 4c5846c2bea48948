"""A thread's graph state changed outside a run (the LangGraph SDK's ``threads.update_state``),
and a thread copied under a new id (``threads.copy``).

**An update** is made as LangGraph makes it (``aupdate_state``, with ``as_node``, at the
thread's newest checkpoint or an older one it keeps), but what LangGraph would write is held
(``_HeldWrites``) and written in one transaction with the rest: each consent pending on the
branch the head leaves ended ``superseded``, the thread's row held as it was read and its head
checked unchanged (no run active, none claimed since, no other update first: else 409
``thread_changed``, nothing written), the thread ``idle``, and a ``state_updated`` audit record.
A refused update (an unknown node, values that do not fit) writes nothing.

**Pruning** a thread to its newest checkpoint (``threads.prune(strategy="keep_latest")``)
drops its history in a transaction that holds its row as well.

**A copy** is a new idle thread of the caller's with the source's graph, note, metadata,
transcript and checkpoints (every branch), in one transaction; no runs, events or consents.
A thread waiting for a consent is not copied (409 ``consent_pending``): the copy would wait for
the same interrupt, whose id is the consent's, and a consent is decided once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any
from uuid import uuid4

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.errors import InvalidUpdateError

from consentry.errors import ConflictError, InvalidRequestError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.clock import Clock
from consentry.runtime.consents import supersede_pending
from consentry.runtime.runs.start import run_in_progress
from consentry.storage import threads as threads_repo
from consentry.storage.audit import record_audit
from consentry.storage.checkpoints import ConsentrySaver, saver_of
from consentry.storage.db.database import Database, DbConnection
from consentry_graphs.registry import CompiledGraph

__all__ = ["ThreadBranches"]


class ThreadBranches:
    def __init__(
        self, *, db: Database, compiled: Callable[[str], CompiledGraph], clock: Clock
    ) -> None:
        self._db = db
        self._compiled = compiled
        self._clock = clock

    async def update_state(
        self,
        owner: Principal,
        thread_id: str,
        *,
        values: Any,
        as_node: str | None,
        checkpoint_id: str | None,
    ) -> dict[str, Any]:
        """The thread's graph state updated as ``as_node`` with ``values`` (from its newest
        checkpoint, or ``checkpoint_id``): the new checkpoint's config."""
        async with self._db.read() as conn:
            row = await threads_repo.get_thread(conn, owner, thread_id)
            graph = self._compiled(row.graph)
            saver = saver_of(graph)
            head_id = await saver.ahead_id_in(conn, thread_id)  # checked again when written
        if row.status == "running":
            raise run_in_progress(thread_id)
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        if checkpoint_id is not None:
            config["configurable"]["checkpoint_id"] = checkpoint_id
            if await saver.aget_tuple(config) is None:
                raise NotFoundError(
                    f"Thread {thread_id!r} keeps no checkpoint {checkpoint_id!r}.",
                    code="checkpoint_not_found",
                    details={"thread_id": thread_id, "checkpoint_id": checkpoint_id},
                )
        held = _HeldWrites(saver)
        config["configurable"][CONFIG_KEY_CHECKPOINTER] = held
        try:
            updated = await graph.aupdate_state(config, values, as_node=as_node)
        except (InvalidUpdateError, ValueError, TypeError) as exc:
            raise InvalidRequestError(
                f"The update does not fit graph {row.graph!r}: {_first_line(exc)}",
                code="invalid_update",
                details={"graph": row.graph, "as_node": as_node},
            ) from None
        now = self._clock()
        new_id = str(updated["configurable"]["checkpoint_id"])
        base = checkpoint_id or head_id or new_id
        async with self._db.write() as conn:
            # The consents first, then the thread's row: the order a decision and an expiry
            # take them in (no deadlock between them on PostgreSQL).
            superseded = await supersede_pending(
                conn, owner, thread_id, run_id=None, checkpoint_id=base, now=now
            )
            held_row = await threads_repo.hold_thread(conn, owner, row, idle_at=now)
            if not held_row or await saver.ahead_id_in(conn, thread_id) != head_id:
                raise _changed(thread_id)
            await held.write(conn)
            await record_audit(
                conn,
                owner,
                action="state_updated",
                thread_id=thread_id,
                actor=owner.display,
                now=now,
                data={
                    "as_node": as_node,
                    "checkpoint_id": new_id,
                    "from_checkpoint": checkpoint_id,
                    "superseded": superseded,
                },
            )
        return {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": new_id,
            "checkpoint_map": None,
        }

    async def copy(self, owner: Principal, thread_id: str) -> str:
        """A copy of the owner's thread under a new id; the new id."""
        async with self._db.read() as conn:
            row = await threads_repo.get_thread(conn, owner, thread_id)
        if row.status == "running":
            raise run_in_progress(thread_id)
        if row.status == "awaiting_consent":
            raise ConflictError(
                "This thread waits for a consent; decide it first (a copy would wait for the "
                "same one, which is decided once).",
                code="consent_pending",
                details={"thread_id": thread_id},
            )
        saver = saver_of(self._compiled(row.graph))
        copy_id, now = str(uuid4()), self._clock()
        async with self._db.write() as conn:
            if not await threads_repo.hold_thread(conn, owner, row, idle_at=None):
                raise run_in_progress(thread_id)
            await threads_repo.copy_thread(conn, row, thread_id=copy_id, now=now)
            await saver.acopy_thread_in(conn, thread_id, copy_id)
            await record_audit(
                conn,
                owner,
                action="thread_copied",
                thread_id=copy_id,
                actor=owner.display,
                now=now,
                data={"from_thread": thread_id},
            )
        return copy_id

    async def keep_latest(self, owner: Principal, thread_id: str) -> bool:
        """Drop the owner's thread's checkpoints but the newest of each namespace (its
        history); False when it has none to drop from or a run is active on it."""
        async with self._db.read() as conn:
            try:
                row = await threads_repo.get_thread(conn, owner, thread_id)
            except NotFoundError:
                return False
        if row.status == "running":
            return False
        saver = saver_of(self._compiled(row.graph))
        async with self._db.write() as conn:
            if not await threads_repo.hold_thread(conn, owner, row, idle_at=None):
                return False
            await saver.aprune_in(conn, thread_id)
        return True


class _HeldWrites(BaseCheckpointSaver[str]):
    """The server's saver for LangGraph's ``aupdate_state``: what it would write is held for
    :meth:`write`, in the caller's transaction; it reads what it holds (an update of several
    steps reads the one before), else through."""

    def __init__(self, saver: ConsentrySaver) -> None:
        super().__init__(serde=saver.serde)
        self._saver = saver
        self._puts: list[tuple[RunnableConfig, Checkpoint, CheckpointMetadata]] = []
        self._writes: list[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]] = []

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        wanted = config["configurable"].get("checkpoint_id")
        for put_config, checkpoint, metadata in self._puts:
            if checkpoint["id"] == wanted:
                return self._held(put_config, checkpoint, metadata)
        return await self._saver.aget_tuple(config)

    def _held(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> CheckpointTuple:
        configurable = config["configurable"]
        named = {"thread_id": configurable["thread_id"], "checkpoint_ns": ""}
        parent = configurable.get("checkpoint_id")
        writes = [
            (task_id, channel, value)
            for written, task_writes, task_id, _ in self._writes
            if written["configurable"].get("checkpoint_id") == checkpoint["id"]
            for channel, value in task_writes
        ]
        return CheckpointTuple(
            config={"configurable": {**named, "checkpoint_id": checkpoint["id"]}},
            checkpoint=checkpoint,
            metadata=metadata,
            parent_config={"configurable": {**named, "checkpoint_id": parent}} if parent else None,
            pending_writes=writes,
        )

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for found in self._saver.alist(config, filter=filter, before=before, limit=limit):
            yield found

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self._puts.append((config, checkpoint, metadata))
        configurable = config["configurable"]
        return {
            "configurable": {
                "thread_id": configurable["thread_id"],
                "checkpoint_ns": configurable.get("checkpoint_ns", ""),
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._writes.append((config, writes, task_id, task_path))

    def get_next_version(self, current: str | None, channel: None) -> str:
        return self._saver.get_next_version(current, channel)

    async def write(self, conn: DbConnection) -> None:
        for config, checkpoint, metadata in self._puts:
            await self._saver.aput_in(conn, config, checkpoint, metadata)
        for config, writes, task_id, task_path in self._writes:
            await self._saver.aput_writes_in(conn, config, writes, task_id, task_path)


def _changed(thread_id: str) -> ConflictError:
    return ConflictError(
        "The thread changed while the update was made (a run started, or another update came "
        "first): read its state again and send the update again.",
        code="thread_changed",
        details={"thread_id": thread_id},
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
