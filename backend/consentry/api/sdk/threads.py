"""The LangGraph SDK's threads (``client.threads.create``, ``get``, ``search``, ``update``,
``delete``, ``count``, ``prune``, ``copy``, ``get_state`` at the newest checkpoint or a kept one,
``update_state``, ``get_history``):
Consentry's threads, with their status as the SDK names it (``idle``, ``busy``, ``interrupted``
while a consent waits, ``error``) and their graph's state read from its checkpoints."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from consentry.api.http.deps import PrincipalDep, ThreadsDep, ThreadWriterDep
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.sdk._ids import CHECKPOINT_ID, SDK_ID
from consentry.runtime.graph_state import GraphState
from consentry.schemas.sdk import (
    SdkThread,
    SdkThreadState,
    ThreadCountRequest,
    ThreadCreateRequest,
    ThreadHistoryRequest,
    ThreadSearchRequest,
    ThreadStateAtRequest,
    ThreadUpdateRequest,
)
from consentry.schemas.sdk_branches import (
    PruneResult,
    ThreadPruneRequest,
    ThreadStateUpdate,
    ThreadStateUpdateRequest,
)

__all__ = ["router"]

router = APIRouter(prefix="/threads", tags=["langgraph-sdk"], responses=ERROR_RESPONSES)


@router.post("")
async def create_thread(
    body: ThreadCreateRequest, owner: PrincipalDep, writer: ThreadWriterDep
) -> SdkThread:
    """A thread before its first run, in the caller's default project. Its graph is
    `metadata.graph_id` (else the default graph); its first run may name another assistant,
    whose graph it then keeps. An id taken by any thread is 409 `thread_exists`, or with
    `if_exists: "do_nothing"` the caller's own thread as it is."""
    return await writer.create(
        owner,
        thread_id=str(body.thread_id) if body.thread_id else None,
        metadata=body.metadata,
        if_exists=body.if_exists,
    )


@router.post("/search")
async def search_threads(
    body: ThreadSearchRequest, owner: PrincipalDep, threads: ThreadsDep
) -> list[SdkThread]:
    """The caller's threads that match every filter, most recently active first (or
    `sort_by`). `status: "interrupted"` lists the threads a consent waits on."""
    return await threads.search_sdk_threads(
        owner,
        status=body.status,
        metadata=body.metadata,
        ids=body.ids,
        limit=body.limit,
        offset=body.offset,
        order_by=body.sort_by or "updated_at",
        descending=body.sort_order != "asc",
    )


@router.post("/prune")
async def prune_threads(
    body: ThreadPruneRequest, owner: PrincipalDep, writer: ThreadWriterDep
) -> PruneResult:
    """Delete the caller's threads (`strategy: "delete"`, as `DELETE /threads/{id}`), or cut
    each to its newest checkpoint (`"keep_latest"`). A thread with an active run is left as it
    is and not counted; an id that is not one of the caller's threads is 404 `thread_not_found`
    (nothing is pruned)."""
    pruned = await writer.prune(owner, body.thread_ids, strategy=body.strategy)
    return PruneResult(pruned_count=pruned)


@router.post("/count")
async def count_threads(body: ThreadCountRequest, owner: PrincipalDep, threads: ThreadsDep) -> int:
    """How many of the caller's threads match every filter (those of `search`)."""
    return await threads.count_sdk_threads(owner, status=body.status, metadata=body.metadata)


@router.get(f"/{{thread_id:{SDK_ID}}}")
async def get_thread(thread_id: str, owner: PrincipalDep, threads: ThreadsDep) -> SdkThread:
    """The thread: status, metadata, its graph's values and what it waits for."""
    return await threads.sdk_thread(owner, thread_id)


@router.patch(f"/{{thread_id:{SDK_ID}}}")
async def update_thread(
    thread_id: str, body: ThreadUpdateRequest, owner: PrincipalDep, writer: ThreadWriterDep
) -> SdkThread:
    """Merge keys into the thread's metadata."""
    return await writer.update_metadata(owner, thread_id, body.metadata)


@router.delete(f"/{{thread_id:{SDK_ID}}}", status_code=204, response_class=Response)
async def delete_thread(thread_id: str, owner: PrincipalDep, writer: ThreadWriterDep) -> None:
    """Delete the thread with its runs, events, consents and checkpoints (its audit records
    stay); 409 `run_in_progress` while a run is active."""
    await writer.delete(owner, thread_id)


@router.post(f"/{{thread_id:{SDK_ID}}}/copy")
async def copy_thread(thread_id: str, owner: PrincipalDep, writer: ThreadWriterDep) -> SdkThread:
    """A copy of the thread under a new id: its graph, note, metadata, transcript and every
    checkpoint it keeps; no runs, events or consents. 409 `run_in_progress` while a run is
    active, `consent_pending` while it waits for a consent (the copy would wait for the same
    one)."""
    return await writer.copy(owner, thread_id)


@router.post("/{thread_id}/state")
async def update_thread_state(
    thread_id: str, body: ThreadStateUpdateRequest, owner: PrincipalDep, writer: ThreadWriterDep
) -> ThreadStateUpdate:
    """Update the thread's graph state as node `as_node` would (LangGraph's `update_state`),
    at its newest checkpoint or an older one it keeps (a new branch). The consents pending on
    the branch its head leaves end `superseded`; 409 `run_in_progress` while a run is active;
    422 `invalid_update` for values or a node the graph does not take."""
    checkpoint = await writer.update_state(
        owner,
        thread_id,
        values=body.values,
        as_node=body.as_node,
        checkpoint_id=body.from_checkpoint,
    )
    return ThreadStateUpdate(checkpoint=checkpoint)


@router.get("/{thread_id}/state")
async def get_thread_state(
    thread_id: str,
    owner: PrincipalDep,
    threads: ThreadsDep,
    subgraphs: Annotated[bool, Query(description="Accepted; subgraphs are not shown.")] = False,
) -> SdkThreadState:
    """The graph's newest checkpoint: values, next nodes, tasks with their interrupts."""
    return _state(await threads.graph_state(owner, thread_id))


@router.get(f"/{{thread_id}}/state/{{checkpoint_id:{CHECKPOINT_ID}}}")
async def get_thread_state_at(
    thread_id: str,
    checkpoint_id: Annotated[str, Path(max_length=64)],
    owner: PrincipalDep,
    threads: ThreadsDep,
    subgraphs: Annotated[bool, Query(description="Accepted; subgraphs are not shown.")] = False,
) -> SdkThreadState:
    """The graph at one of the thread's kept checkpoints (404 `checkpoint_not_found` for one
    the server does not keep: `CONSENTRY_CHECKPOINT_RETENTION`)."""
    return _state(await threads.graph_state_at(owner, thread_id, checkpoint_id))


@router.post("/{thread_id}/state/checkpoint")
async def get_thread_state_at_checkpoint(
    thread_id: str, body: ThreadStateAtRequest, owner: PrincipalDep, threads: ThreadsDep
) -> SdkThreadState:
    """The same, the checkpoint named as a `ThreadState.checkpoint` names it (none: the
    newest)."""
    checkpoint_id = body.checkpoint.checkpoint_id
    if checkpoint_id is None:
        return _state(await threads.graph_state(owner, thread_id))
    return _state(await threads.graph_state_at(owner, thread_id, checkpoint_id))


@router.post("/{thread_id}/history")
async def get_thread_history(
    thread_id: str, body: ThreadHistoryRequest, owner: PrincipalDep, threads: ThreadsDep
) -> list[SdkThreadState]:
    """The graph's checkpoints, newest first: with `CONSENTRY_CHECKPOINT_RETENTION=latest` (the
    default) only the newest (each step's replaces the one before); `all` keeps every step's."""
    before = body.before
    if before is not None and not isinstance(before, str):
        before = before.checkpoint_id
    states = await threads.graph_history(
        owner, thread_id, limit=body.limit, before=before, metadata=body.metadata
    )
    return [_state(state) for state in states]


def _state(state: GraphState) -> SdkThreadState:
    return SdkThreadState(**state.as_dict())
