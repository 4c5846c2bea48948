"""A task's pending writes as ``ConsentrySaver`` stores them: the rows, which of a run's writes it
holds until its step's checkpoint (:func:`holds`), and the operation that writes them at once.

Every value is serialized here, before the operation starts (outside the database's write lock).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP, PendingWrite
from langgraph.checkpoint.serde.base import SerializerProtocol

from consentry.storage.checkpoints._operations import CheckpointFence, Operation
from consentry.storage.checkpoints._sql import CheckpointSql
from consentry.storage.checkpoints._writes import put_writes

__all__ = [
    "WriteRow",
    "WriteRows",
    "copied_write_rows",
    "holds",
    "put_task_writes",
    "write_rows",
]

WriteRow = tuple[Any, ...]
"""A pending write as stored: thread, namespace, checkpoint, task, path, index, channel, value."""
WriteRows = list[WriteRow]

_RESUME = "__resume__"
"""LangGraph's channel of resume values (one of its special channels)."""
assert _RESUME in WRITES_IDX_MAP, "LangGraph renamed its resume channel"


_INTERRUPT = "__interrupt__"
"""LangGraph's channel of a task's interrupts."""
assert _INTERRUPT in WRITES_IDX_MAP, "LangGraph renamed its interrupt channel"


def holds(channel: str) -> bool:
    """Whether a run's write of ``channel`` is held (``ConsentrySaver.aput_writes``)."""
    return channel not in WRITES_IDX_MAP or channel in (_RESUME, _INTERRUPT)


def put_task_writes(
    sql: CheckpointSql,
    serde: SerializerProtocol,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    *,
    fence: CheckpointFence | None,
) -> Operation:
    return put_writes(
        sql,
        write_rows(serde, config, writes, task_id, task_path),
        replace=all(channel in WRITES_IDX_MAP for channel, _ in writes),
        fence=fence,
    )


def write_rows(
    serde: SerializerProtocol,
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
        for dumped in (serde.dumps_typed(value),)
    ]


def copied_write_rows(
    serde: SerializerProtocol, key: tuple[str, str, str], pending_writes: list[PendingWrite]
) -> WriteRows:
    """The rows of pending writes another saver read (``ConsentrySaver.copy_in``): in their
    order within a task, ``task_path`` left empty."""
    index: dict[str, int] = {}
    rows: list[tuple[Any, ...]] = []
    for task_id, channel, value in pending_writes:
        idx = index.get(task_id, 0)
        index[task_id] = idx + 1
        type_, blob = serde.dumps_typed(value)
        rows.append((*key, task_id, "", WRITES_IDX_MAP.get(channel, idx), channel, type_, blob))
    return rows
