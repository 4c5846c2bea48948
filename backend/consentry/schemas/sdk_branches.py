"""The LangGraph SDK face's requests that change a thread's history outside a run:
``threads.update_state``, ``threads.copy`` (no body) and ``threads.prune``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, JsonValue

from consentry.schemas.requests import RequestModel
from consentry.schemas.sdk import CheckpointRef, named_checkpoint

__all__ = ["PruneResult", "ThreadPruneRequest", "ThreadStateUpdate", "ThreadStateUpdateRequest"]


class ThreadStateUpdateRequest(RequestModel):
    """``POST /threads/{id}/state``: the thread's graph state updated as a node would."""

    values: dict[str, JsonValue] | list[JsonValue] | None = Field(
        description="What the node returns: the values its writes give the state's channels "
        "(messages as LangChain messages' JSON)."
    )
    as_node: str | None = Field(
        default=None,
        max_length=200,
        description="The node the update is written as (default: the one that wrote last).",
    )
    checkpoint: CheckpointRef | None = Field(
        default=None,
        description="The checkpoint updated: the thread's newest (default), or an older one "
        "it keeps (a new branch from there).",
    )
    checkpoint_id: str | None = Field(
        default=None, max_length=64, description="The same as `checkpoint`, by its id alone."
    )

    @property
    def from_checkpoint(self) -> str | None:
        return named_checkpoint(self.checkpoint, self.checkpoint_id)


class ThreadStateUpdate(BaseModel):
    """What ``threads.update_state`` answers: the new checkpoint."""

    checkpoint: dict[str, str | None]


class ThreadPruneRequest(RequestModel):
    """``POST /threads/prune``: delete the caller's threads, or their checkpoints but the
    newest."""

    thread_ids: list[str] = Field(min_length=1, max_length=1000)
    strategy: Literal["delete", "keep_latest"] = Field(
        default="delete",
        description="`delete`: the threads go, as `DELETE /threads/{id}` deletes one; "
        "`keep_latest`: only their newest checkpoint stays (their history goes).",
    )


class PruneResult(BaseModel):
    """What ``threads.prune`` answers."""

    pruned_count: int = Field(description="The threads pruned (not those with an active run).")
