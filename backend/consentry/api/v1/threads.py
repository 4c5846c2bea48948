"""Threads: the caller's list, one thread's status and pending consents, its transcript, its tool
calls."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from consentry.api.http.deps import IdempotencyKey, PrincipalDep, RunsDep, ThreadsDep
from consentry.api.http.last_event_id import LastEventId
from consentry.api.http.limits import page_limit
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.http.sse_response import EventStreamResponse
from consentry.api.http.streaming import EVENT_STREAM_RESPONSE
from consentry.api.run_requests import RunRequestsDep
from consentry.schemas.audit import AuditTrail
from consentry.schemas.threads import (
    CancelAccepted,
    ThreadDetail,
    ThreadList,
    ToolCallList,
    Transcript,
)

__all__ = ["router"]

router = APIRouter(prefix="/v1/threads", tags=["threads"], responses=ERROR_RESPONSES)


@router.get("")
async def list_threads(
    owner: PrincipalDep,
    threads: ThreadsDep,
    limit: Annotated[int, page_limit(100)],
    note_id: Annotated[
        str | None, Query(max_length=64, description="Only the threads about this note.")
    ] = None,
    project_id: Annotated[
        str | None, Query(max_length=64, description="Only the threads of this project.")
    ] = None,
) -> ThreadList:
    """The caller's threads, most recently active first: all of them, or a note's (the note its
    first message named) or a project's conversations."""
    return await threads.list_threads(owner, limit=limit, note_id=note_id, project_id=project_id)


@router.get("/{thread_id}")
async def get_thread(thread_id: str, owner: PrincipalDep, threads: ThreadsDep) -> ThreadDetail:
    """Status (`idle`, `running`, `awaiting_consent`), pending consents and last terminal reason."""
    return await threads.detail(owner, thread_id)


@router.get("/{thread_id}/messages")
async def get_messages(thread_id: str, owner: PrincipalDep, threads: ThreadsDep) -> Transcript:
    """The conversation so far, from the thread's checkpoint."""
    return await threads.transcript(owner, thread_id)


@router.get("/{thread_id}/tool-calls")
async def get_tool_calls(thread_id: str, owner: PrincipalDep, threads: ThreadsDep) -> ToolCallList:
    """The tools the thread's model called, in order, each with its result (`pending` until the
    tool returned): kept apart from the messages, which hold what the user and the assistant
    said."""
    return await threads.tool_calls(owner, thread_id)


@router.get(
    "/{thread_id}/stream",
    response_class=EventStreamResponse,
    responses={
        200: {
            **EVENT_STREAM_RESPONSE[200],
            "description": "The stored events after `Last-Event-ID`, then the active run live, "
            "until its `final`.",
        },
        400: ERROR_RESPONSES[422] | {"description": "`Last-Event-ID` is not a seq of this thread."},
    },
)
async def join_stream(
    thread_id: str,
    owner: PrincipalDep,
    run_requests: RunRequestsDep,
    after: LastEventId,
) -> EventStreamResponse:
    """Join a thread's stream: what the client missed (by `Last-Event-ID`), then what the active
    run does, until its `final`. Without an id the whole stored history comes first."""
    return await run_requests.join(owner, thread_id, after=after or 0)


@router.post("/{thread_id}/cancel", status_code=202)
async def cancel_run(thread_id: str, owner: PrincipalDep, runs: RunsDep) -> CancelAccepted:
    """Stop the thread's active run at its next step boundary; the thread stays usable."""
    return await runs.cancel(owner, thread_id)


@router.post(
    "/{thread_id}/retry", response_class=EventStreamResponse, responses=EVENT_STREAM_RESPONSE
)
async def retry_run(
    thread_id: str,
    owner: PrincipalDep,
    run_requests: RunRequestsDep,
    idempotency_key: IdempotencyKey = None,
) -> EventStreamResponse:
    """Run the thread's failed run again from its last good checkpoint (once the model provider
    is back, say) and stream the new run's events, as `POST /v1/chat` does. 409
    `nothing_to_retry` unless the thread's last run ended `failed` with work left to run; 409
    `run_in_progress` while a run is active."""
    return await run_requests.retry(owner, thread_id, idempotency_key=idempotency_key)


@router.get("/{thread_id}/audit")
async def get_audit(thread_id: str, owner: PrincipalDep, threads: ThreadsDep) -> AuditTrail:
    """Every run and consent transition of the thread, oldest first (append-only)."""
    return await threads.audit(owner, thread_id)
