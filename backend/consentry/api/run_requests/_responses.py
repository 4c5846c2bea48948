"""How a run request's events go out: an event stream response (a face's headers and frames, one
of the open streams held), a run's events followed live or from its first (a replay), and a run
cancelled when its client leaves before its end (``on_disconnect="cancel"``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from consentry.api.http.sse_response import EventStreamResponse
from consentry.api.http.streaming import StreamFace, event_stream
from consentry.errors import ConflictError, NotFoundError
from consentry.principal import Principal
from consentry.runtime.guards import OpenStreams
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import ActiveRun, RunService
from consentry.settings import Settings

__all__ = ["EventResponses", "graph_modes"]


class EventResponses:
    """The responses of ``RunRequests``: each an event stream of ``open_streams``."""

    def __init__(self, *, runs: RunService, open_streams: OpenStreams, settings: Settings) -> None:
        self._runs = runs
        self._open_streams = open_streams
        self._settings = settings
        self._cancels: set[asyncio.Future[None]] = set()
        """Cancels of runs whose client left (``on_disconnect="cancel"``), kept until done."""

    async def replay(
        self,
        owner: Principal,
        thread_id: str,
        run_id: str,
        face: StreamFace | None,
        headers: dict[str, str] | None = None,
    ) -> EventStreamResponse:
        """``run_id``'s events from its first (and those of the runs that continue it after a
        crash), live while it goes on."""
        events = await self._runs.replay(owner, thread_id, run_id, graph_modes=graph_modes(face))
        ids = {"X-Thread-Id": thread_id, "X-Run-Id": run_id}
        return self.response(events, {**ids, **(headers or {})}, face=face)

    def cancelled_on_disconnect(
        self, owner: Principal, run: ActiveRun, face: StreamFace | None
    ) -> EventStreamResponse:
        """``run``'s events; a client gone before its ``final`` cancels it (a cancel that comes
        after the run's end is refused by its run id, and changes nothing)."""
        ended = False
        listened = run.events.listen(graph_modes=graph_modes(face), kept=_kept(face))  # now

        async def events() -> AsyncIterator[OutgoingEvent]:
            nonlocal ended
            async for event in listened:
                ended = ended or event.type == "final"
                yield event

        def on_close() -> None:
            run.events.detach()
            if not ended:
                cancel = asyncio.ensure_future(self._cancel_quietly(owner, run))
                self._cancels.add(cancel)
                cancel.add_done_callback(self._cancels.discard)

        headers = {"X-Thread-Id": run.thread_id, "X-Run-Id": run.run_id}
        return self.response(events(), headers, on_close=on_close, face=face)

    async def _cancel_quietly(self, owner: Principal, run: ActiveRun) -> None:
        with contextlib.suppress(ConflictError, NotFoundError):  # it ended, or was deleted
            await self._runs.cancel(owner, run.thread_id, run_id=run.run_id)

    def run_response(self, run: ActiveRun, face: StreamFace | None) -> EventStreamResponse:
        headers = {"X-Thread-Id": run.thread_id, "X-Run-Id": run.run_id}
        # ``listen`` is called before anything awaits: the face's wish for LangGraph's outputs
        # reaches the run before its task starts (``RunEventStream.listen``). The run goes on
        # without a listener when the client goes away.
        events = run.events.listen(graph_modes=graph_modes(face), kept=_kept(face))
        return self.response(events, headers, on_close=run.events.detach, face=face)

    def response(
        self,
        events: AsyncIterator[OutgoingEvent],
        headers: dict[str, str],
        on_close: Callable[[], None] | None = None,
        face: StreamFace | None = None,
    ) -> EventStreamResponse:
        if face is not None:
            headers = {**headers, **face.headers(headers["X-Thread-Id"], headers.get("X-Run-Id"))}
        return event_stream(
            events,
            keepalive_seconds=self._settings.keepalive_seconds,
            open_streams=self._open_streams,
            headers=headers,
            on_close=on_close,
            frames=face.frames if face is not None else None,
        )


def graph_modes(face: StreamFace | None) -> frozenset[str]:
    """LangGraph's outputs after each step the face sends (``/v1``'s, ``face=None``: none)."""
    return face.graph_modes if face is not None else frozenset()


def _kept(face: StreamFace | None) -> bool:
    return face is not None and face.kept
