"""How run events go out as Server-Sent Events, for every streaming route.

Each event is one SSE frame: ``id`` (the thread's seq), ``event`` (its type) and ``data`` (its
JSON). When the server starts shutting down (SIGTERM), sse-starlette sets the app's shared
``shutting_down`` event; the runs then stop at their next step boundary
(``RunExecutor.suspend_all``), and a stream whose run stopped without a ``final`` ends with a
``retry:`` hint, so the client reconnects (``GET /v1/threads/{id}/stream`` with
``Last-Event-ID``) to whichever process continues the run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from sse_starlette import EventSourceResponse, ServerSentEvent

from backend.runtime.event_stream import OutgoingEvent, RunSuspendedError
from backend.runtime.executor import SHUTDOWN_GRACE_SECONDS
from backend.services import Services

__all__ = ["RECONNECT_AFTER_MS", "event_stream_response"]

RECONNECT_AFTER_MS = 2000
"""The ``retry:`` a stream ends with when its run stopped without a ``final``."""


def event_stream_response(
    events: AsyncIterator[OutgoingEvent],
    *,
    services: Services,
    headers: dict[str, str],
    on_close: Callable[[], None] | None = None,
) -> EventSourceResponse:
    return EventSourceResponse(
        _frames(events, on_close),
        ping=services.settings.keepalive_seconds,
        shutdown_event=services.shutting_down,
        shutdown_grace_period=SHUTDOWN_GRACE_SECONDS,  # the runs reach a step boundary
        headers=headers,
    )


async def _frames(
    events: AsyncIterator[OutgoingEvent], on_close: Callable[[], None] | None
) -> AsyncIterator[ServerSentEvent]:
    try:
        async for event in events:
            yield ServerSentEvent(data=event.data, event=event.type, id=str(event.seq))
    except RunSuspendedError:
        yield ServerSentEvent(
            comment="the run continues elsewhere: reconnect with Last-Event-ID",
            retry=RECONNECT_AFTER_MS,
        )
    finally:
        if on_close is not None:
            on_close()
