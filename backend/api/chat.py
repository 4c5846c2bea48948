"""``POST /v1/chat``: start a run and stream its events."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter
from sse_starlette import EventSourceResponse, ServerSentEvent

from backend.api.deps import PrincipalDep, ServicesDep
from backend.api.responses import ERROR_RESPONSES
from backend.runtime.executor import SHUTDOWN_GRACE_SECONDS, ActiveRun
from backend.schemas.chat import ChatRequest

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["chat"])


async def _sse(run: ActiveRun) -> AsyncIterator[ServerSentEvent]:
    try:
        async for event in run.events.listen():
            yield ServerSentEvent(data=event.data, event=event.type, id=str(event.seq))
    finally:
        run.events.detach()  # the run goes on without a listener


@router.post(
    "/chat",
    response_class=EventSourceResponse,
    responses={
        200: {
            "description": "`text/event-stream` of run events; the last one is `final`.",
            "content": {"text/event-stream": {"schema": {"$ref": "#/components/schemas/Event"}}},
        },
        **ERROR_RESPONSES,
    },
)
async def chat(
    request: ChatRequest, owner: PrincipalDep, services: ServicesDep
) -> EventSourceResponse:
    """Send a message (or a decision on a pending consent) and stream the run's events."""
    run = await services.runs.start(owner, request)
    return EventSourceResponse(
        _sse(run),
        ping=services.settings.keepalive_seconds,
        shutdown_grace_period=SHUTDOWN_GRACE_SECONDS,  # let the run reach its final event
        headers={"X-Thread-Id": run.thread_id, "X-Run-Id": run.run_id},
    )
