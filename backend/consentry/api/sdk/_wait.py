"""How the SDK's ``runs.wait`` and ``runs.join`` answer: the state a run leaves, as one JSON body
sent when the run ends, with newlines before it so the wait is never silent."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

__all__ = ["waiting"]


class _WaitResponse(StreamingResponse):
    """A streamed answer whose client leaving is noticed at once: Starlette (for an ASGI server
    of spec 2.4, as uvicorn is) notices it only when the next newline fails to send, up to a
    keepalive period later, and ``on_disconnect="cancel"`` is to act when the client goes."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = asyncio.Event()

        async def sending(message: Message) -> None:
            await send(message)
            started.set()

        async def listening() -> None:
            await started.wait()  # (a receive before the answer started reads a stale end)
            while (await receive())["type"] != "http.disconnect":
                pass

        streamer = asyncio.ensure_future(self.stream_response(sending))
        listener = asyncio.ensure_future(listening())
        try:
            await asyncio.wait({streamer, listener}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (streamer, listener):
                task.cancel()
            await asyncio.gather(streamer, listener, return_exceptions=True)
        if not streamer.cancelled() and (error := streamer.exception()) is not None:
            with contextlib.suppress(OSError):  # the client went away as it was sent
                raise error


def waiting(
    thread_id: str,
    run_id: str,
    outcome: Callable[[], Awaitable[dict[str, Any]]],
    keepalive_seconds: float,
    *,
    on_close: Callable[[bool], None] = lambda ended: None,
) -> StreamingResponse:
    """The state the run leaves (``outcome()``), as a JSON body sent when it ends; until then a
    newline every keepalive period (JSON allows leading whitespace) keeps proxies from closing
    the wait. The headers go at once: ``Location`` is where the SDK waits again after a drop.
    ``on_close``: when the body ends, or its client goes away (told whether the run ended)."""

    async def body() -> AsyncIterator[bytes]:
        waited: asyncio.Future[dict[str, Any]] | None = None
        try:
            waited = asyncio.ensure_future(outcome())
            try:
                while not waited.done():
                    done, _ = await asyncio.wait({waited}, timeout=keepalive_seconds)
                    if not done:
                        yield b"\n"
                yield json.dumps(waited.result()).encode()
            finally:
                waited.cancel()
        finally:
            on_close(waited is not None and waited.done() and not waited.cancelled())

    path = f"/threads/{thread_id}/runs/{run_id}"
    headers = {"Content-Location": path, "Location": f"{path}/join"}
    return _WaitResponse(body(), media_type="application/json", headers=headers)
