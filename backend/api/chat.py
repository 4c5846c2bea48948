"""``POST /v1/chat``: start a run and stream its events."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter
from sse_starlette import EventSourceResponse, ServerSentEvent

from backend.api.deps import IdempotencyKey, PrincipalDep, ServicesDep
from backend.api.responses import ERROR_RESPONSES
from backend.api.streaming import event_stream_response
from backend.runtime.event_stream import OutgoingEvent
from backend.runtime.executor import ActiveRun
from backend.runtime.idempotency import StoredResponse, request_fingerprint
from backend.schemas.chat import ChatRequest
from backend.services import Services

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["chat"])


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
    request: ChatRequest,
    owner: PrincipalDep,
    services: ServicesDep,
    idempotency_key: IdempotencyKey = None,
) -> EventSourceResponse:
    """Send a message (or a decision on a pending consent) and stream the run's events.

    With an `Idempotency-Key` that was used before, the first run's stored events are sent again
    (token events are not stored, so a replay has none)."""

    async def start() -> ActiveRun:
        return await services.runs.start(owner, request)

    if idempotency_key is None:
        return _stream(services, await start())
    fingerprint = request_fingerprint("/v1/chat", request.model_dump(mode="json"))
    result = await services.idempotency.run(
        owner,
        idempotency_key,
        fingerprint,
        start,
        lambda run: StoredResponse(200, None, run.thread_id, run.run_id),
    )
    if isinstance(result, ActiveRun):
        return _stream(services, result)
    assert result.thread_id is not None
    assert result.run_id is not None
    stored = await services.threads.stored_run(owner, result.thread_id, result.run_id)
    return EventSourceResponse(
        _replay(stored),
        ping=services.settings.keepalive_seconds,
        headers={
            "X-Thread-Id": result.thread_id,
            "X-Run-Id": result.run_id,
            "Idempotent-Replayed": "true",
        },
    )


def _stream(services: Services, run: ActiveRun) -> EventSourceResponse:
    return event_stream_response(
        run.events.listen(),
        services=services,
        headers={"X-Thread-Id": run.thread_id, "X-Run-Id": run.run_id},
        on_close=run.events.detach,  # the run goes on without a listener
    )


async def _replay(events: list[OutgoingEvent]) -> AsyncIterator[ServerSentEvent]:
    for event in events:
        yield ServerSentEvent(data=event.data, event=event.type, id=str(event.seq))
