"""Retention ``turns`` and forks: where a run's turn starts, what it may drop, and a fork's
anchor (``ConsentrySaver``'s docstring tells the whole story)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
)
from langgraph.checkpoint.base.id import uuid6

from consentry.storage.checkpoints._operations import Droppable

__all__ = ["FORK_MARK", "TurnStart", "fork_anchor", "is_head_read", "turn_start"]

FORK_MARK = "consentry_fork_of"
"""The metadata key of a fork's anchor (:func:`fork_anchor`): the checkpoint it copies."""


@dataclass(frozen=True)
class TurnStart:
    """Where a run's turn started (retention ``turns``): what it keeps and what it may drop."""

    kept: str | None
    """The checkpoint the turn started from (None: the thread had none): kept, the parent of
    every checkpoint the run writes."""
    anchor: str = ""
    """A fork's anchor the run started on (``""``: none): dropped with the run's first write."""

    @property
    def droppable(self) -> Droppable:
        """The run's own checkpoints: after the one it started on (the anchor included)."""
        return Droppable(self.anchor or self.kept or "", self.anchor)

    def owns(self, checkpoint_id: str) -> bool:
        after, also = self.droppable
        return checkpoint_id > after or checkpoint_id == also


def fork_anchor(source: CheckpointTuple) -> tuple[RunnableConfig, Checkpoint, CheckpointMetadata]:
    """A fork's anchor: a copy of ``source`` (an older checkpoint of its thread's root graph,
    without its pending writes: a new input discards its unfinished tasks) under a new id, so
    the thread's newest; the config, checkpoint and metadata to put. As LangGraph's own copy
    (``update_state(..., as_node="__copy__")``), it has ``source``'s parent: a channel kept as
    deltas (``DeltaChannel``) is rebuilt from its ancestors' writes, and ``source``'s own are
    the old branch's next step. The run that continues from it drops it with its first write
    when it keeps turns, and hangs what it writes from ``source``."""
    configurable = source.config["configurable"]
    source_id = str(configurable["checkpoint_id"])
    parent = (source.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    step = source.metadata.get("step", -1)
    step = step + 1 if isinstance(step, int) else 0
    anchor = copy_checkpoint(source.checkpoint)
    anchor["id"] = str(uuid6(clock_seq=step))
    anchor["ts"] = datetime.now(UTC).isoformat()
    metadata: CheckpointMetadata = {
        "source": "fork",
        "step": step,
        "parents": source.metadata.get("parents", {}),
    }
    metadata[FORK_MARK] = source_id  # type: ignore[literal-required]
    config: RunnableConfig = {
        "configurable": {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": "",
            "checkpoint_id": parent,
        }
    }
    return config, anchor, metadata


def is_head_read(config: RunnableConfig) -> bool:
    """A read of the thread's newest checkpoint, not a subgraph's nor an older one."""
    configurable = config["configurable"]
    return not configurable.get("checkpoint_ns") and not configurable.get("checkpoint_id")


def turn_start(head: CheckpointTuple | None) -> TurnStart:
    """Where a run that starts on ``head`` starts its turn: ``head``, or (a fork's anchor) the
    checkpoint it copies."""
    if head is None:
        return TurnStart(None)
    head_id = str(head.config["configurable"]["checkpoint_id"])
    forked = head.metadata.get(FORK_MARK)
    if isinstance(forked, str):
        return TurnStart(forked, anchor=head_id)
    return TurnStart(head_id)
