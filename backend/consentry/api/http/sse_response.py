"""The HTTP response that carries a stream of Server-Sent Events.

One task sends the frames, one ``send`` per frame, with nothing else on that path (no timeout or
cancel scope per frame). A second task per stream does everything that is not a frame:

- it waits for the client to go away (``http.disconnect``) and then cancels the sender, so the
  frame source's ``finally`` runs at once (a run goes on without its listener);
- it sends a keep-alive comment when no frame went out for ``keepalive_seconds`` (proxies close
  quiet connections), from the same timer that waits for the disconnect.

The end of the body is sent by the response itself once both tasks are over, so nothing can
follow it, and ``on_close`` runs however the stream ended (even if its frames never started).

The server's shutdown does not pass through here: as soon as it is asked, :class:`OpenStreams`
ends every open stream with a reconnect hint (``OpenStreams.end_all``), including a stream that
has not sent its first frame yet, while runs stop at their next step boundary.

Two ``send`` calls can overlap only when a keep-alive comes while a frame waits for a slow client
to read; each call writes whole frames, so the client never sees one cut into another.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Mapping

from sse_starlette import ServerSentEvent
from starlette.background import BackgroundTask
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from consentry.runtime.guards import OpenStreams

__all__ = ["RECONNECT_AFTER_MS", "RECONNECT_HINT", "EventStreamResponse"]

RECONNECT_AFTER_MS = 2000
"""The ``retry:`` a stream ends with when its run stopped without a ``final``."""
RECONNECT_HINT = ServerSentEvent(
    comment="the run continues elsewhere: reconnect with Last-Event-ID", retry=RECONNECT_AFTER_MS
).encode()
"""The frame a stream ends with when its run goes on elsewhere (or after a restart)."""
_KEEPALIVE = ServerSentEvent(comment="ping").encode()


class EventStreamResponse(Response):
    """``text/event-stream`` of already encoded frames. ``on_close`` runs once the stream is
    over, however it ended (even when its frames never started)."""

    def __init__(
        self,
        frames: AsyncGenerator[bytes, None],
        *,
        keepalive_seconds: float,
        open_streams: OpenStreams,
        headers: Mapping[str, str] | None = None,
        on_close: Callable[[], None] | None = None,
        status_code: int = 200,  # what FastAPI's OpenAPI reads off the signature
    ) -> None:
        self.status_code = status_code
        # Set here, not on the class: the routes document their stream's schema themselves.
        self.media_type = "text/event-stream"
        self.background: BackgroundTask | None = None
        self.init_headers(  # no body, so no Content-Length: the frames follow as they come
            {
                **(headers or {}),
                "Cache-Control": "no-store",
                "Connection": "keep-alive",
                "X-Accel-Buffering": "no",  # nginx: pass each frame on as it comes
            }
        )
        self._frames = frames
        self._keepalive = keepalive_seconds
        self._open = open_streams
        self._on_close = on_close
        self._last_sent = 0.0
        self._sender: asyncio.Task[None] | None = None
        self._reconnect = False

    def also_on_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` too once the stream is over (after ``on_close``), however it ended."""
        first = self._on_close

        def both() -> None:
            try:
                if first is not None:
                    first()
            finally:
                callback()

        self._on_close = both

    def end_with_reconnect_hint(self) -> None:
        """Stop sending frames; the stream ends with :data:`RECONNECT_HINT`."""
        self._reconnect = True
        if self._sender is not None:
            self._sender.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        self._open.add(self)
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            self._last_sent = loop.time()
            self._sender = sender = loop.create_task(self._send_frames(send))
            if self._reconnect:  # the shutdown came before the stream started
                sender.cancel()
            watcher = loop.create_task(self._watch(receive, send, sender))
            try:
                await asyncio.wait((sender,))
            finally:
                # Nothing is sent behind the last frame: the watcher stops before the end.
                sender.cancel()
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
            if sender.cancelled():
                await self._frames.aclose()  # frames that never started have nothing to close
                if not self._reconnect:
                    return  # the client went away: nobody to tell
                await send(
                    {"type": "http.response.body", "body": RECONNECT_HINT, "more_body": True}
                )
            elif (error := sender.exception()) is not None:
                raise error
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            self._open.discard(self)
            if self._on_close is not None:
                self._on_close()

    async def _send_frames(self, send: Send) -> None:
        loop = asyncio.get_running_loop()
        async with contextlib.aclosing(self._frames) as frames:
            async for frame in frames:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
                self._last_sent = loop.time()

    async def _watch(self, receive: Receive, send: Send, sender: asyncio.Task[None]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            quiet_for = loop.time() - self._last_sent
            if quiet_for >= self._keepalive:
                await send({"type": "http.response.body", "body": _KEEPALIVE, "more_body": True})
                self._last_sent = loop.time()
                continue
            try:
                async with asyncio.timeout(self._keepalive - quiet_for):
                    message = await receive()
            except TimeoutError:
                continue
            if message["type"] == "http.disconnect":
                sender.cancel()
                return
