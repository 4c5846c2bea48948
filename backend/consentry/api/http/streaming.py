"""How run events go out as Server-Sent Events, for every streaming route.

Each event is one SSE frame: ``id`` (the thread's seq), ``event`` (its type) and ``data`` (its
JSON). When the server starts shutting down (SIGTERM), the runs stop at their next step boundary
(``RunExecutor.suspend_all``, see ``services``), and a stream whose run stopped without a
``final`` ends with a ``retry:`` hint, so the client reconnects (``GET /v1/threads/{id}/stream``
with ``Last-Event-ID``) to whichever process continues the run. How the frames are sent:
``api.http.sse_response``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, Protocol

from sse_starlette import ServerSentEvent

from consentry.api.http.sse_response import RECONNECT_HINT, EventStreamResponse
from consentry.runtime.guards import OpenStreams
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import RunSuspendedError

__all__ = ["EVENT_STREAM_RESPONSE", "StreamFace", "event_stream", "frames_of"]


class StreamFace(Protocol):
    """How a protocol face sends a run's events: its frames, and the headers of its response
    (``/v1`` sends Consentry's events as they are; the LangGraph SDK face its own frames)."""

    @property
    def graph_modes(self) -> frozenset[str]:
        """LangGraph's outputs after each step the face sends (``values``, ``updates``,
        ``tasks``: ``runtime.runs.GRAPH_OUTPUT_MODES``), asked of the run it follows; ``/v1``
        sends none, so its runs record none."""
        ...

    @property
    def kept(self) -> bool:
        """The run keeps them with its stored events, for a join to replay (the LangGraph SDK's
        ``stream_resumable``), when this face's request starts it."""
        ...

    def frames(self, events: AsyncIterator[OutgoingEvent]) -> AsyncGenerator[bytes, None]: ...

    def headers(self, thread_id: str, run_id: str | None) -> dict[str, str]: ...


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


def event_stream(
    events: AsyncIterator[OutgoingEvent],
    *,
    keepalive_seconds: float,
    open_streams: OpenStreams,
    headers: dict[str, str],
    on_close: Callable[[], None] | None = None,
    frames: Callable[[AsyncIterator[OutgoingEvent]], AsyncGenerator[bytes, None]] | None = None,
) -> EventStreamResponse:
    """The response that sends ``events`` as SSE frames (``frames``: a face's own; by default
    Consentry's, and a stream whose run was suspended ends with the reconnect hint), counted
    among the ``open_streams`` a shutdown ends."""
    return EventStreamResponse(
        (frames or frames_of)(events),
        keepalive_seconds=keepalive_seconds,
        open_streams=open_streams,
        headers=headers,
        on_close=on_close,
    )


def _frame(event: OutgoingEvent) -> bytes:
    """``id``, ``event`` and ``data`` lines, as sse-starlette's ``ServerSentEvent`` writes them
    (a tenth of its cost: the one frame a token costs). Data with a line break (never an event's
    JSON) is written as several ``data`` lines, by sse-starlette."""
    data = event.data
    if "\n" in data or "\r" in data:
        return ServerSentEvent(data=data, event=event.type, id=str(event.seq)).encode()
    return f"id: {event.seq}\r\nevent: {event.type}\r\ndata: {data}\r\n\r\n".encode()


async def frames_of(events: AsyncIterator[OutgoingEvent]) -> AsyncGenerator[bytes, None]:
    """Consentry's frames: one per event, ``id`` its seq, ``event`` its type."""
    try:
        async for event in events:
            yield _frame(event)
    except RunSuspendedError:
        yield RECONNECT_HINT
