"""What a run's checkpointer holds back instead of writing at once, by run: its pending writes
(a task's results, a resume value, an interrupt), by namespace, until its step's checkpoint or
its next transaction; its input checkpoint, until its next write (``ConsentrySaver``). Taken,
it is the operations that write it, and the run's transaction that takes it stores it with its
events or loses it with them."""

from __future__ import annotations

import weakref
from collections.abc import Callable

from langgraph.checkpoint.base import CheckpointMetadata

from consentry.storage.checkpoints._drivers import run_on, send_with_next
from consentry.storage.checkpoints._operations import (
    CheckpointFence,
    Operation,
    SerializedCheckpoint,
)
from consentry.storage.checkpoints._pending import WriteRows
from consentry.storage.checkpoints._sql import CheckpointSql
from consentry.storage.checkpoints._writes import held_writes
from consentry.storage.db.database import DbConnection

__all__ = ["RunHolds", "is_run_input", "write_in"]


class RunHolds:
    """Each run's held writes, keyed by the run's committer (weakly: a run gone takes them)."""

    def __init__(self) -> None:
        self._rows: weakref.WeakKeyDictionary[object, dict[str, WriteRows]] = (
            weakref.WeakKeyDictionary()
        )
        self._inputs: weakref.WeakKeyDictionary[object, Callable[[], Operation]] = (
            weakref.WeakKeyDictionary()
        )
        """The operation that writes a run's input checkpoint, made anew each time it is sent."""

    def hold_rows(self, run: object, namespace: str, rows: WriteRows) -> None:
        self._rows.setdefault(run, {}).setdefault(namespace, []).extend(rows)

    def take_step(self, run: object, namespace: str) -> WriteRows:
        """The run's writes of the namespace's step, which its checkpoint replaces."""
        return self._rows.get(run, {}).pop(namespace, [])

    def hold_input(self, run: object, put: Callable[[], Operation]) -> None:
        self._inputs[run] = put

    def take_input(self, run: object) -> Callable[[], Operation] | None:
        return self._inputs.pop(run, None)

    def take(self, run: object, sql: CheckpointSql, fence: CheckpointFence) -> list[Operation]:
        """All the run holds, taken, as the operations that write it: its input checkpoint,
        then its pending writes (``held_writes``), each one fenced statement on PostgreSQL."""
        earlier = self._inputs.pop(run, None)
        rows = [row for rows in self._rows.pop(run, {}).values() for row in rows]
        inputs = [earlier()] if earlier is not None else []
        return [*inputs, *held_writes(sql, rows, fence=fence)]

    def forget(self, run: object) -> None:
        self._rows.pop(run, None)
        self._inputs.pop(run, None)


async def write_in(
    conn: DbConnection, operations: list[Operation], *, checked_later: bool, commit: bool = False
) -> None:
    """Run ``operations`` (fenced by one run's lease) in the caller's transaction.
    ``checked_later``: a later statement checks the lease and fails the transaction when it moved
    on; on PostgreSQL these go unread in the transaction's next message. ``commit``: the last is
    checked and commits the transaction (the others go unread with it)."""
    last = operations[-1] if commit and operations else None
    for operation in operations[:-1] if last is not None else operations:
        if checked_later or last is not None:
            await send_with_next(conn, operation)
        else:
            await run_on(conn, operation, unread=True)
    if last is not None:
        await run_on(conn, last, unread=True, commit=True)


def is_run_input(saved: SerializedCheckpoint, metadata: CheckpointMetadata) -> bool:
    """Whether ``saved`` is an input checkpoint of a graph (not a subgraph's)."""
    return metadata.get("source") == "input" and not saved.checkpoint_ns
