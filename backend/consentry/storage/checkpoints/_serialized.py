"""A checkpoint as ``ConsentrySaver`` writes it: serialized (with its stored metadata) before its
operation starts, the config that names it once saved, and one another saver read, copied in as
it was (``ConsentrySaver.copy_in``)."""

from __future__ import annotations

import json

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from consentry.storage.checkpoints import _operations as ops
from consentry.storage.checkpoints._operations import Operation
from consentry.storage.checkpoints._pending import copied_write_rows
from consentry.storage.checkpoints._sql import CheckpointSql
from consentry.storage.checkpoints._writes import put_writes

__all__ = ["RUN_MARK", "copied_in", "saved_config", "serialized"]

RUN_MARK = "consentry_run_id"
"""The checkpoint metadata key naming the Consentry run that wrote it (a run sets it in its
config's ``metadata``): stored as the row's ``run_id`` too, which a rollback deletes by."""


def serialized(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
) -> ops.SerializedCheckpoint:
    configurable = config["configurable"]
    type_, blob = serde.dumps_typed(checkpoint)
    stored = get_checkpoint_metadata(config, metadata)
    run_id = stored.get(RUN_MARK, stored.get("run_id"))
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


def saved_config(saved: ops.SerializedCheckpoint) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": saved.thread_id,
            "checkpoint_ns": saved.checkpoint_ns,
            "checkpoint_id": saved.checkpoint_id,
        }
    }


def copied_in(sql: CheckpointSql, serde: SerializerProtocol, found: CheckpointTuple) -> Operation:
    """The operation of ``ConsentrySaver.copy_in``: ``found`` written as another saver read it."""
    configurable = found.config["configurable"]
    parent = (found.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    config: RunnableConfig = {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": configurable.get("checkpoint_ns", ""),
            "checkpoint_id": parent,
        }
    }
    saved = serialized(serde, config, found.checkpoint, found.metadata)
    key = (saved.thread_id, saved.checkpoint_ns, saved.checkpoint_id)
    rows = copied_write_rows(serde, key, found.pending_writes or [])
    yield from ops.put_checkpoint(sql, saved, fence=None, latest_only=False)
    yield from put_writes(sql, rows, replace=False, fence=None)
