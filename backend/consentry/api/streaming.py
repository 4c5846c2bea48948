"""How run events go out as Server-Sent Events, for every streaming route.

Each event is one SSE frame: ``id`` (the thread's seq), ``event`` (its type) and ``data`` (its
JSON). When the server starts shutting down (SIGTERM), the runs stop at their next step boundary
(``RunExecutor.suspend_all``, see ``services``), and a stream whose run stopped without a
``final`` ends with a ``retry:`` hint, so the client reconnects (``GET /v1/threads/{id}/stream``
with ``Last-Event-ID``) to whichever process continues the run. How the frames are sent:
``api.sse_response``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from sse_starlette import ServerSentEvent

from consentry.api.sse_response import RECONNECT_HINT, EventStreamResponse
from consentry.principal import Principal
from consentry.runtime.guards import KeyHold, StoredResponse, request_fingerprint
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import ActiveRun, RunSuspendedError
from consentry.services import Services

__all__ = ["EVENT_STREAM_RESPONSE", "event_stream_response", "stream_new_run"]

_EVENT_STREAM_CONTENT: dict[str, Any] = {
    "text/event-stream": {
        # OpenAPI 3.1 describes an event stream by its events, each as the object of its fields.
        # Keep-alive comments and the `retry:` hint a stream may end with carry no `data`: they
        # are no events.
        "schema": {
            "type": "object",
            "required": ["id", "event", "data"],
            "properties": {
                "id": {
                    "type": "string",
                    "pattern": "^[0-9]+$",
                    "description": "The event's `seq`.",
                },
                "event": {"type": "string", "description": "The event's `type`."},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": "#/components/schemas/Event"},
                },
            },
        }
    }
}
EVENT_STREAM_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "`text/event-stream` of run events; the last one is `final`.",
        "content": _EVENT_STREAM_CONTENT,
    }
}
"""The answer of every streaming route: one SSE frame per run event (``_frame``)."""


def event_stream_response(
    events: AsyncIterator[OutgoingEvent],
    *,
    services: Services,
    headers: dict[str, str],
    on_close: Callable[[], None] | None = None,
) -> EventStreamResponse:
    return EventStreamResponse(
        _frames(events),
        keepalive_seconds=services.settings.keepalive_seconds,
        open_streams=services.open_streams,
        headers=headers,
        on_close=on_close,
    )


async def stream_new_run(
    services: Services,
    owner: Principal,
    start: Callable[[KeyHold | None], Awaitable[ActiveRun]],
    *,
    idempotency_key: str | None,
    route: str,
    body: dict[str, Any],
) -> EventStreamResponse:
    """Start a run and stream its events. With an ``Idempotency-Key`` that was used before (for
    the same route and body), the run that first request started is streamed again instead,
    from its first event (and the run that continued it after a crash), live while it goes on;
    token events are not stored, so the stored part has none."""
    if idempotency_key is None:
        return _run_stream(services, await start(None))
    result = await services.idempotency.run(
        owner,
        idempotency_key,
        request_fingerprint(route, body),
        start,
        lambda thread_id, run_id: StoredResponse(200, None, thread_id, run_id),
    )
    if isinstance(result, ActiveRun):
        return _run_stream(services, result)
    assert result.thread_id is not None
    assert result.run_id is not None
    replayed = await services.runs.replay(owner, result.thread_id, result.run_id)
    services.metrics.stream_replayed("idempotent")
    return event_stream_response(
        replayed,
        services=services,
        headers={
            "X-Thread-Id": result.thread_id,
            "X-Run-Id": result.run_id,
            "Idempotent-Replayed": "true",
        },
    )


def _run_stream(services: Services, run: ActiveRun) -> EventStreamResponse:
    return event_stream_response(
        run.events.listen(),
        services=services,
        headers={"X-Thread-Id": run.thread_id, "X-Run-Id": run.run_id},
        on_close=run.events.detach,  # the run goes on without a listener
    )


def _frame(event: OutgoingEvent) -> bytes:
    return ServerSentEvent(data=event.data, event=event.type, id=str(event.seq)).encode()


async def _frames(events: AsyncIterator[OutgoingEvent]) -> AsyncGenerator[bytes, None]:
    try:
        async for event in events:
            yield _frame(event)
    except RunSuspendedError:
        yield RECONNECT_HINT
