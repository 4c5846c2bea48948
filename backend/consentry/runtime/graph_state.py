"""A thread's graph state as JSON, the way the LangGraph Agent Server shows it: its values
(messages as ``model_dump()`` dicts with ``type`` "human" | "ai" | "tool"), the nodes next, the
tasks with their interrupts, the checkpoint it was read from. One reading for every face
(``GET /threads/{id}/state``, a thread's ``values``, the SDK face's ``values`` stream events)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Interrupt, PregelTask, StateSnapshot
from pydantic_core import to_json, to_jsonable_python

from consentry_graphs.registry import CompiledGraph

__all__ = [
    "GraphState",
    "as_json",
    "graph_history",
    "head_checkpoint_id",
    "interrupt_as_json",
    "read_graph_state",
    "read_graph_state_at",
    "read_values_as_json",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GraphState:
    """Where a thread's graph stands, JSON-ready (LangGraph SDK's ``ThreadState``)."""

    values: dict[str, Any]
    next: list[str]
    tasks: list[dict[str, Any]]
    """``{"id", "name", "error", "interrupts", "checkpoint", "state", "result"}`` each."""
    interrupts: list[dict[str, Any]]
    """``{"value", "id"}`` each (and ``response_schema`` when the interrupt has one); the id is
    the interrupt's, which is the approval's."""
    checkpoint: dict[str, Any]
    """``{"thread_id", "checkpoint_ns", "checkpoint_id"}``."""
    metadata: dict[str, Any]
    created_at: str | None
    parent_checkpoint: dict[str, Any] | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "values": self.values,
            "next": self.next,
            "tasks": self.tasks,
            "interrupts": self.interrupts,
            "checkpoint": self.checkpoint,
            "metadata": self.metadata,
            "created_at": self.created_at,
            "parent_checkpoint": self.parent_checkpoint,
        }


def as_json(value: Any) -> Any:
    """A state value as JSON: pydantic models (LangChain messages among them) as their
    ``model_dump()``, dataclasses as dicts, dates as ISO strings, anything else as its ``repr``."""
    return to_jsonable_python(value, fallback=repr)


async def read_graph_state(graph: CompiledGraph, thread_id: str) -> GraphState:
    """The newest checkpoint of the thread's graph (empty values when it never ran)."""
    return _graph_state(await graph.aget_state(_config(thread_id)), thread_id)


async def read_values_as_json(
    graph: CompiledGraph, thread_id: str, *, run_id: str
) -> dict[str, Any] | None:
    """The thread's state values as plain JSON data, which every database's JSON column takes
    (what a webhook post carries, queued in the closing transaction of run ``run_id``): a
    ``NaN`` or an infinity as ``None`` (PostgreSQL's ``json`` refuses them, and the transaction
    with them), what JSON cannot say as its ``repr``. None, logged, when they cannot be read or
    written at all: the caller goes on without them."""
    try:
        state = await read_graph_state(graph, thread_id)
        values = json.loads(to_json(state.values, inf_nan_mode="null", fallback=repr))
    except Exception:
        log.exception(
            "could not read a thread's state values as JSON; going on without them",
            extra={"thread_id": thread_id, "run_id": run_id},
        )
        return None
    return values if isinstance(values, dict) else None


async def head_checkpoint_id(graph: CompiledGraph, thread_id: str) -> str | None:
    """The id of the thread's newest checkpoint (None before its first run): the saver's newest
    tuple, without reading the state from it."""
    checkpointer = graph.checkpointer
    assert isinstance(checkpointer, BaseCheckpointSaver)  # served graphs have the server's
    newest = await checkpointer.aget_tuple(_config(thread_id))
    return None if newest is None else _checkpoint(newest.config, thread_id)["checkpoint_id"]


async def read_graph_state_at(
    graph: CompiledGraph, thread_id: str, checkpoint_id: str
) -> GraphState | None:
    """The thread's graph at the checkpoint ``checkpoint_id`` names (None when the
    checkpointer does not keep it)."""
    config = _config(thread_id)
    config["configurable"]["checkpoint_id"] = checkpoint_id
    snapshot = await graph.aget_state(config)
    if snapshot.created_at is None:  # LangGraph's empty state: no such checkpoint
        return None
    return _graph_state(snapshot, thread_id)


async def graph_history(
    graph: CompiledGraph,
    thread_id: str,
    *,
    limit: int,
    before: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> list[GraphState]:
    """The thread's checkpoints, newest first, as many as the checkpointer keeps (only the
    newest with ``CONSENTRY_CHECKPOINT_RETENTION=latest``):
    older than ``before`` (a checkpoint id), with ``metadata`` in theirs, when given."""
    start: RunnableConfig | None = None
    if before is not None:
        start = {"configurable": {"thread_id": thread_id, "checkpoint_id": before}}
    snapshots = graph.aget_state_history(
        _config(thread_id), filter=dict(metadata) if metadata else None, before=start, limit=limit
    )
    return [_graph_state(snapshot, thread_id) async for snapshot in snapshots]


def _graph_state(snapshot: StateSnapshot, thread_id: str) -> GraphState:
    values = as_json(snapshot.values)
    return GraphState(
        values=values if isinstance(values, dict) else {"__root__": values},
        next=list(snapshot.next),
        tasks=[_task(task, thread_id) for task in snapshot.tasks],
        interrupts=[interrupt_as_json(interrupt) for interrupt in snapshot.interrupts],
        checkpoint=_checkpoint(snapshot.config, thread_id),
        metadata=as_json(dict(snapshot.metadata or {})),
        created_at=snapshot.created_at,
        parent_checkpoint=(
            _checkpoint(snapshot.parent_config, thread_id) if snapshot.parent_config else None
        ),
    )


def _task(task: PregelTask, thread_id: str) -> dict[str, Any]:
    state = task.state
    return {
        "id": task.id,
        "name": task.name,
        "error": repr(task.error) if task.error is not None else None,
        "interrupts": [interrupt_as_json(interrupt) for interrupt in task.interrupts],
        "checkpoint": _checkpoint(state, thread_id) if isinstance(state, Mapping) else None,
        "state": _graph_state(state, thread_id).as_dict()
        if isinstance(state, StateSnapshot)
        else None,
        "result": as_json(task.result) if task.result is not None else None,
    }


def interrupt_as_json(interrupt: Interrupt) -> dict[str, Any]:
    """``{"value", "id"}`` (and ``response_schema`` when it has one): the id is the approval's."""
    shown: dict[str, Any] = {"value": as_json(interrupt.value), "id": interrupt.id}
    response_schema = getattr(interrupt, "response_schema", None)
    if response_schema is not None:
        shown["response_schema"] = as_json(response_schema)
    return shown


def _checkpoint(
    config: RunnableConfig | Mapping[str, Any] | None, thread_id: str
) -> dict[str, Any]:
    configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
    return {
        "thread_id": configurable.get("thread_id", thread_id),
        "checkpoint_ns": configurable.get("checkpoint_ns", ""),
        "checkpoint_id": configurable.get("checkpoint_id"),
    }


def _config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}
