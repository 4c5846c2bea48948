"""``ConsentrySaver``: LangGraph's checkpointer contract on Consentry's own database and tables.

Async methods run in the app's transactions (``Database``), on the same connections as every
other write: on SQLite one call of the app's connection a method (no second connection
contending for the write lock), on PostgreSQL the app's pool. A run hands the graph a
``StepCommitter`` in its config (``RUN_KEY``): the run's checkpoint writes are then fenced by
its lease, and each checkpoint is committed in the transaction the run opens for it, with the
step's events (``StepCommitter.commit_step``). ``latest_only``
(``CONSENTRY_CHECKPOINT_RETENTION=latest``) drops the namespace's older checkpoints in that same
transaction; with ``keep_turns`` (``turns``) only those the run wrote itself (``TurnStart``,
read with the run's first read of its thread; a thread's first run starts its turn with its own
first checkpoint, its input's): the checkpoint its turn started from is kept, so a
thread keeps one checkpoint a run, and each checkpoint the run writes names that one as its
parent (the one it replaced is gone). A fork's anchor (``afork_in``) is a copy of an older
checkpoint written as the thread's newest; the run from it keeps the checkpoint it copies as its
turn's start and drops the anchor with its first write, so the new branch hangs from the
checkpoint it forked and the other branches keep their turns.

The synchronous methods (for code that runs a graph with ``invoke``) use a connection of their
own, opened on first use (``_sync_methods``). Nothing here is fenced or batched without a run's
committer.

The class keeps LangGraph's async methods; what they write is made by its siblings: a
checkpoint's row (``_serialized``), a task's pending writes and which of a run's are held
(``_pending``, ``_writes``), what a run holds back until its next write (``_held``), and the
newest checkpoint a read before a run's claim kept for the run's first read (``_head_read``).
"""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from consentry.storage.checkpoints import _operations as ops
from consentry.storage.checkpoints._drivers import run_on, send_with_next
from consentry.storage.checkpoints._head_read import READ_KEY, HeadRead
from consentry.storage.checkpoints._held import RunHolds, is_run_input, write_in
from consentry.storage.checkpoints._in_transaction import InTransaction
from consentry.storage.checkpoints._operations import (
    CheckpointFence,
    Droppable,
    Operation,
)
from consentry.storage.checkpoints._pending import (
    holds,
    put_task_writes,
    write_rows,
)
from consentry.storage.checkpoints._serialized import (
    RUN_MARK,
    copied_in,
    saved_config,
    serialized,
)
from consentry.storage.checkpoints._sql import sql_for
from consentry.storage.checkpoints._sync_methods import SyncMethods
from consentry.storage.checkpoints._turns import (
    FORK_MARK,
    TurnStart,
    is_head_read,
    turn_start,
)
from consentry.storage.checkpoints._writes import held_writes
from consentry.storage.db.database import Database, DbConnection

__all__ = [
    "FORK_MARK",
    "READ_KEY",
    "RUN_KEY",
    "RUN_MARK",
    "ConsentrySaver",
    "HeadRead",
    "StepCommitter",
    "TurnStart",
]

RUN_KEY = "__consentry_run__"
"""The ``configurable`` key of a run's ``StepCommitter`` (``__``-prefixed: LangGraph keeps it out
of the checkpoint's metadata)."""


class StepCommitter(Protocol):
    """What a run gives its checkpoint writes: its lease, and the transaction of its steps."""

    fence: CheckpointFence
    latest_only: bool
    keep_turns: bool
    """With ``latest_only``: keep the checkpoint the run's turn started from (``turn``)."""
    turn: TurnStart | None
    """Where the run's turn started, once its first read of its thread told (None: not yet)."""
    new_thread: bool
    """The run's thread was created with the run: until the run writes, the thread has no
    checkpoint to read (the saver answers without a read, and clears it at the run's first
    write)."""
    head: HeadRead | None
    """The thread's newest checkpoint as read before the run's claim, when nothing can have
    written the thread since: the run's first read is answered with it (``_head_read``), and
    clears it."""

    async def commit_step(self, write: Callable[[DbConnection], Awaitable[None]]) -> None:
        """Open the step's write transaction, ``write(conn)`` the checkpoint in it, add what else
        the step stored, and commit. The checkpoint is fenced: when the lease moved on,
        ``LeaseLostError`` is raised, by ``write`` or (SQLite, where the writes go with the
        transaction's next hop) by the next statement or the commit, and nothing is stored."""


class ConsentrySaver(InTransaction, SyncMethods, BaseCheckpointSaver[str]):
    def __init__(
        self, db: Database, *, database_url: str, serde: SerializerProtocol | None = None
    ) -> None:
        super().__init__(serde=serde)
        self._db = db
        self._sql = sql_for(db.dialect)
        self._init_sync(db.dialect, database_url)
        self._held = RunHolds()
        """What each run holds back instead of writing it at once (:meth:`aput_writes`)."""

    # -- async: the server's ------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config["configurable"]
        run: StepCommitter | None = configurable.get(RUN_KEY)
        if run is not None and configurable.get("thread_id") != run.fence.thread_id:
            run = None  # another thread's read in the run (its graph reads another thread)
        if run is not None and run.new_thread:
            run.turn = run.turn or TurnStart(None)
            return None  # a thread created with its run: nothing to read before it writes
        newest = is_head_read(config)
        read_before: HeadRead | None = None
        if run is not None:
            read_before, run.head = run.head, None  # for the run's first read only
        # What a read before the run's claim found, when nothing can have written since
        # (``_head_read``): the rows, decoded again.
        kept = read_before.rows if newest and read_before is not None else None
        rows = kept
        if rows is None:
            async with self._db.read() as conn:
                rows = await run_on(conn, self._get_rows(config))
        found = ops.tuple_of(self.serde, rows, again=kept is not None)
        keeps: HeadRead | None = configurable.get(READ_KEY)
        if newest and keeps is not None and keeps.thread_id == configurable.get("thread_id"):
            keeps.rows = rows  # for the run that starts from it
        if run is not None and run.turn is None and newest:
            run.turn = turn_start(found)  # the run's first read of its thread
        return found

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
        saved = serialized(self.serde, config, checkpoint, metadata)
        run: StepCommitter | None = config["configurable"].get(RUN_KEY)
        droppable = Droppable()  # retention `latest`: every older checkpoint of the namespace
        drops = run is not None and run.latest_only
        if run is not None and drops and run.keep_turns and not saved.checkpoint_ns:
            # Where the turn started is known from the run's first read (LangGraph reads before
            # it writes); if it were not, nothing older is dropped.
            drops = run.turn is not None
            if run.turn is not None and run.turn.kept is None and not run.turn.anchor:
                # A thread's first run: its first checkpoint (its input's) starts the turn and
                # is kept, the point a client forks from to edit the thread's first message.
                run.turn = TurnStart(saved.checkpoint_id)
                drops = False
            elif run.turn is not None:
                droppable = run.turn.droppable
                parent = saved.parent_checkpoint_id
                if parent is not None and run.turn.owns(parent):  # dropped: the turn's start
                    saved = replace(saved, parent_checkpoint_id=run.turn.kept)
        if run is None:
            await self._write(ops.put_checkpoint(self._sql, saved, fence=None, latest_only=False))
            return saved_config(saved)
        run.new_thread = False  # from now on, its checkpoints are read
        # The step's tasks' writes: replaced by this checkpoint, kept only with every checkpoint.
        own = saved.thread_id == run.fence.thread_id  # not another thread its graph writes
        held = self._held.take_step(run, saved.checkpoint_ns) if own else []
        if run.latest_only:
            held = []
        put = functools.partial(
            ops.put_checkpoint,
            self._sql,
            saved,
            fence=run.fence,
            latest_only=drops,
            droppable=droppable,
        )
        earlier = self._held.take_input(run)
        if earlier is None and not held and own and is_run_input(saved, metadata):
            # The run's input checkpoint waits for the run's next write, and goes in its
            # transaction: from it the graph only starts (LangGraph's ``__start__`` task maps the
            # input to its channels) and checkpoints again, so the step that follows is one
            # transaction, not two. Until then nothing of the run's is stored that refers to it;
            # a run that stops before writes it with its end (``acommit_held``), and one that
            # dies before is given its input again (``runs.inputs``), as one that died before
            # its input was written.
            self._held.hold_input(run, put)
            return saved_config(saved)

        async def write(conn: DbConnection) -> None:
            if earlier is not None:  # fenced by the same lease as the checkpoint after it
                await send_with_next(conn, earlier())
            # Unread: on SQLite the step's whole transaction is then one hop (its commit's). The
            # last write of the step's transaction (its events went before it): on PostgreSQL
            # the transaction commits in the same message, unless held writes follow.
            await run_on(conn, put(), unread=True, commit=not held)
            for writes in held_writes(self._sql, held, fence=None):
                await run_on(conn, writes, unread=True)

        await run.commit_step(write)
        return saved_config(saved)

    async def acommit_held(self, run: StepCommitter) -> None:
        """Write what the run holds (its graph stopped in a step: an interrupt, an error, a
        stop; its input checkpoint, when nothing followed it), in one transaction with the
        events the run recorded since its last write (``StepCommitter.commit_step``): a finished
        task of the unfinished step is not run again, and what it told is stored with what backs
        it."""
        operations = self._held.take(run, self._sql, run.fence)
        if operations:  # the last checked, with the commit; the others unread before it
            await run.commit_step(
                lambda conn: write_in(conn, operations, checked_later=False, commit=True)
            )

    async def write_held_in(
        self, conn: DbConnection, run: StepCommitter, *, checked_later: bool
    ) -> None:
        """Write what the run holds (see :meth:`acommit_held`) in the caller's transaction: the
        run's own after its graph stopped (its end, a consent policy's decision, its suspension),
        so that an interrupt goes with the consent that asks it. ``checked_later``: a later
        statement of the transaction checks the run's lease and fails the transaction when it
        moved on (the run's release at its end); on PostgreSQL these then go unread, in the
        transaction's next message. Otherwise each is checked itself. What is written is no
        longer held: it shares the fate of the events the transaction takes with it (a
        transaction that fails loses both, and the step that made them runs again)."""
        operations = self._held.take(run, self._sql, run.fence)
        await write_in(conn, operations, checked_later=checked_later)

    def forget_held(self, run: StepCommitter) -> None:
        """The run stores nothing more (its lease is gone)."""
        self._held.forget(run)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """A run's writes of ordinary channels (a task's results), its resume values and its
        interrupts are held, not written: the step's checkpoint, which replaces them, commits
        them with it (or, with retention ``latest``, drops them); a step that does not finish
        gets them written by :meth:`acommit_held` (it failed, it was stopped) or in the run's
        next transaction (:meth:`write_held_in`: its end, which stores the consents the
        interrupts ask, or a consent policy's decision). A resume value is the run's own input,
        recorded with the run (``runs.inputs``) and the decision (``approvals``) before the
        graph starts: a run that dies before its step's checkpoint is continued with it. An
        interrupt cannot be answered before the run's end stores it: nothing asks it before
        (a decision needs the consent, another run the thread the run holds), and a run that
        dies first runs its step again and asks it again, with the same id. An error, and any
        write to a thread not the run's, is written at once, fenced by the run's lease."""
        run: StepCommitter | None = config["configurable"].get(RUN_KEY)
        if run is not None:
            run.new_thread = False
        own = run is not None and str(config["configurable"]["thread_id"]) == run.fence.thread_id
        if run is not None and own and all(holds(channel) for channel, _ in writes):
            rows = write_rows(self.serde, config, writes, task_id, task_path)
            namespace = str(config["configurable"].get("checkpoint_ns", ""))
            self._held.hold_rows(run, namespace, rows)
            return
        fence = run.fence if run is not None else None
        put = put_task_writes(
            self._sql, self.serde, config, writes, task_id, task_path, fence=fence
        )
        earlier = self._held.take_input(run) if run is not None else None
        if earlier is None:
            await self._write(put)
            return
        async with self._db.write() as conn:  # the run's input checkpoint first, same fence
            await send_with_next(conn, earlier())
            await run_on(conn, put, commit=True)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._write(ops.delete_thread(self._sql, str(thread_id)))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._write(ops.delete_runs(self._sql, list(run_ids)))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._write(ops.copy_thread(self._sql, str(source_thread_id), str(target_thread_id)))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._write(ops.prune(self._sql, [str(t) for t in thread_ids], strategy=strategy))

    async def _write(self, operation: Operation) -> Any:
        async with self._db.write() as conn:  # the operation is the whole transaction
            return await run_on(conn, operation, commit=True)

    def copy_in(self, found: CheckpointTuple) -> Operation:
        """Write a checkpoint another saver read, as it was: its id, parent, metadata and pending
        writes (``legacy``). Writes keep their order within a task; ``task_path`` is not in a
        ``CheckpointTuple`` and is left empty."""
        return copied_in(self._sql, self.serde, found)

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
        rows = yield from self._get_rows(config)
        return ops.tuple_of(self.serde, rows)

    def _get_rows(self, config: RunnableConfig) -> Operation:
        configurable = config["configurable"]
        return ops.get_rows(
            self._sql,
            thread_id=str(configurable["thread_id"]),
            checkpoint_ns=configurable.get("checkpoint_ns", ""),
            checkpoint_id=get_checkpoint_id(config),
        )
