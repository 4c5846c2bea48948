"""``consentry.api.http.sse_response``: an ``EventStreamResponse`` sends the frames of an async
generator as they come, keeps a quiet connection alive with ``: ping`` comments, runs the
generator's ``finally`` as soon as the client goes away, and counts itself in ``OpenStreams`` while
open, so that a shutdown can end it with a reconnect hint.

Through real HTTP: a Starlette app with one route, ``GET /events``, whose response sends the
frames the test feeds it (``_FrameSource``), served by uvicorn in the test's loop and read with
httpx as the bytes arrive (``httpx.ASGITransport`` buffers whole responses and never
disconnects).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
import pytest
from sse_starlette import ServerSentEvent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from consentry.api.http.sse_response import (
    RECONNECT_AFTER_MS,
    RECONNECT_HINT,
    EventStreamResponse,
    OpenStreams,
)
from tests.live_server import serve_app

WAIT_SECONDS = 5.0
QUIET_FOR_LONG = 60.0
"""A keep-alive period no test reaches: pings stay out of the way, and what must happen
"promptly" happens well before one is due."""
KEEPALIVE_SECONDS = 0.2
PING = b": ping\r\n\r\n"
FRAME_END = b"\r\n\r\n"
FRAMES = [
    ServerSentEvent(data=f'{{"seq": {seq}}}', event="step", id=str(seq)).encode()
    for seq in range(1, 4)
]


class _FrameSource:
    """The frames of one stream, fed by the test; ``finished`` once the generator's ``finally``
    ran."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[bytes | Exception | None] = asyncio.Queue()
        self.finished = asyncio.Event()

    def send(self, frame: bytes) -> None:
        self._queue.put_nowait(frame)

    def end(self) -> None:
        self._queue.put_nowait(None)

    def fail(self, error: Exception) -> None:
        self._queue.put_nowait(error)

    async def frames(self) -> AsyncGenerator[bytes, None]:
        try:
            while (item := await self._queue.get()) is not None:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            self.finished.set()


class _EventsApp:
    """``GET /events``: an ``EventStreamResponse`` over ``source``, counted in ``open_streams``.
    Records how the app's handling of the request ended (``responded``, ``error``)."""

    def __init__(
        self, *, keepalive_seconds: float, on_request: Callable[[_EventsApp], object] | None
    ) -> None:
        self.source = _FrameSource()
        self.open_streams = OpenStreams()
        self.responded = asyncio.Event()
        self.error: BaseException | None = None
        self.closes = 0
        """How many times the response's ``on_close`` ran."""
        self._keepalive_seconds = keepalive_seconds
        self._on_request = on_request
        self._app = Starlette(routes=[Route("/events", self._events)])

    async def _events(self, request: Request) -> EventStreamResponse:
        if self._on_request is not None:
            self._on_request(self)
        return EventStreamResponse(
            self.source.frames(),
            keepalive_seconds=self._keepalive_seconds,
            open_streams=self.open_streams,
            headers={"X-Run-Id": "run-1"},
            on_close=self._closed,
        )

    def _closed(self) -> None:
        self.closes += 1

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._app(scope, receive, send)
        except BaseException as error:
            self.error = error
            raise
        finally:
            self.responded.set()


class _Body:
    """A streamed response body, read frame by frame as it arrives."""

    def __init__(self, response: httpx.Response) -> None:
        self._chunks = response.aiter_bytes()
        self._buffer = b""

    async def next_frame(self) -> bytes:
        async with asyncio.timeout(WAIT_SECONDS):
            while FRAME_END not in self._buffer:
                chunk = await anext(self._chunks, None)
                if chunk is None:
                    raise AssertionError(f"the body ended before the next frame: {self._buffer!r}")
                self._buffer += chunk
        frame, end, self._buffer = self._buffer.partition(FRAME_END)
        return frame + end

    async def rest(self) -> bytes:
        """Everything up to the end of the body."""
        async with asyncio.timeout(WAIT_SECONDS):
            async for chunk in self._chunks:
                self._buffer += chunk
        rest, self._buffer = self._buffer, b""
        return rest


@asynccontextmanager
async def _serving(
    *,
    keepalive_seconds: float = QUIET_FOR_LONG,
    on_request: Callable[[_EventsApp], object] | None = None,
) -> AsyncIterator[tuple[_EventsApp, httpx.AsyncClient]]:
    app = _EventsApp(keepalive_seconds=keepalive_seconds, on_request=on_request)
    async with serve_app(app, lifespan="off") as base_url:
        try:
            async with httpx.AsyncClient(base_url=base_url, timeout=WAIT_SECONDS) as client:
                yield app, client
        finally:
            app.source.end()  # a stream left open by a failing test must not hold the server


async def _within(awaitable: Awaitable[object]) -> None:
    async with asyncio.timeout(WAIT_SECONDS):
        await awaitable


async def test_the_response_is_an_uncached_unbuffered_event_stream_with_the_route_headers() -> None:
    async with _serving() as (app, client), client.stream("GET", "/events") as response:
        # The headers come at once, before any frame.
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert "content-length" not in response.headers
        assert response.headers["transfer-encoding"] == "chunked"
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["x-accel-buffering"] == "no"
        assert response.headers["x-run-id"] == "run-1"
        app.source.end()
        assert await _Body(response).rest() == b""


async def test_every_frame_goes_out_as_it_comes_and_the_response_ends_with_the_generator() -> None:
    async with _serving() as (app, client), client.stream("GET", "/events") as response:
        body = _Body(response)
        received = []
        for frame in FRAMES:
            app.source.send(frame)
            received.append(await body.next_frame())
        assert len(app.open_streams) == 1
        app.source.end()
        rest = await body.rest()
        # The body ends only after the generator did.
        assert app.source.finished.is_set()

    assert received == FRAMES
    assert rest == b""
    await _within(app.responded.wait())
    assert app.error is None
    assert len(app.open_streams) == 0
    assert app.closes == 1


async def test_a_stream_quiet_for_the_keepalive_period_carries_a_ping_each_period() -> None:
    loop = asyncio.get_running_loop()
    async with (
        _serving(keepalive_seconds=KEEPALIVE_SECONDS) as (app, client),
        client.stream("GET", "/events") as response,
    ):
        body = _Body(response)
        app.source.send(FRAMES[0])
        sent_at = loop.time()
        received = [await body.next_frame(), await body.next_frame(), await body.next_frame()]
        quiet_for = loop.time() - sent_at
        app.source.send(FRAMES[1])
        received.append(await body.next_frame())
        app.source.end()
        received.append(await body.rest())

    assert received == [FRAMES[0], PING, PING, FRAMES[1], b""]
    assert quiet_for >= 2 * KEEPALIVE_SECONDS


async def test_frames_closer_together_than_the_keepalive_period_carry_no_ping() -> None:
    loop = asyncio.get_running_loop()
    frames = [ServerSentEvent(data="token", id=str(seq)).encode() for seq in range(10)]
    # Pacing, not waiting for anything: each gap is a quarter of the keep-alive period, and
    # the whole stream lasts longer than two of them.
    gap_seconds = KEEPALIVE_SECONDS / 4
    async with (
        _serving(keepalive_seconds=KEEPALIVE_SECONDS) as (app, client),
        client.stream("GET", "/events") as response,
    ):
        started_at = loop.time()
        for frame in frames:
            app.source.send(frame)
            await asyncio.sleep(gap_seconds)
        app.source.end()
        lasted = loop.time() - started_at
        body = await _Body(response).rest()

    assert body == b"".join(frames)
    assert lasted > 2 * KEEPALIVE_SECONDS


async def test_a_client_going_away_runs_the_generators_finally_at_once_and_unlists_it() -> None:
    async with _serving() as (app, client):
        async with client.stream("GET", "/events") as response:
            app.source.send(FRAMES[0])
            assert await _Body(response).next_frame() == FRAMES[0]
            assert len(app.open_streams) == 1
        # Closed mid-body: the connection goes, while the generator waits for its next frame.
        await _within(app.source.finished.wait())
        await _within(app.responded.wait())

        assert app.error is None
        assert len(app.open_streams) == 0
    assert app.closes == 1


async def test_ending_all_open_streams_ends_each_with_the_reconnect_hint() -> None:
    async with _serving() as (app, client), client.stream("GET", "/events") as response:
        body = _Body(response)
        app.source.send(FRAMES[0])
        first = await body.next_frame()
        assert len(app.open_streams) == 1

        app.open_streams.end_all()
        rest = await body.rest()
        assert app.source.finished.is_set()

    assert [first, rest] == [FRAMES[0], RECONNECT_HINT]
    assert f"retry: {RECONNECT_AFTER_MS}".encode() in RECONNECT_HINT
    await _within(app.responded.wait())
    assert app.error is None
    assert len(app.open_streams) == 0
    assert app.closes == 1


async def test_an_error_in_the_generator_leaves_the_app_and_breaks_the_stream_off() -> None:
    broken = RuntimeError("the frame source broke")
    async with _serving() as (app, client), client.stream("GET", "/events") as response:
        body = _Body(response)
        app.source.send(FRAMES[0])
        first = await body.next_frame()
        app.source.fail(broken)
        # The server closes the connection without the body's end: no clean end for the client.
        with pytest.raises(httpx.RemoteProtocolError):
            await body.rest()

    assert first == FRAMES[0]
    await _within(app.responded.wait())
    assert app.error is broken
    assert app.source.finished.is_set()
    assert len(app.open_streams) == 0
    assert app.closes == 1


async def test_a_stream_ended_in_the_loop_turn_it_starts_in_still_ends_with_the_hint() -> None:
    def end_all_streams_in_this_loop_turn(app: _EventsApp) -> None:
        # A shutdown's grace period that runs out as a stream starts (``OpenStreams.end_all``
        # is due in the same loop turn as the route's response).
        asyncio.get_running_loop().call_soon(app.open_streams.end_all)

    async with (
        _serving(on_request=end_all_streams_in_this_loop_turn) as (app, client),
        client.stream("GET", "/events") as response,
    ):
        body = await _Body(response).rest()

    assert body == RECONNECT_HINT
    await _within(app.responded.wait())
    assert app.error is None
    assert len(app.open_streams) == 0
    assert app.closes == 1
