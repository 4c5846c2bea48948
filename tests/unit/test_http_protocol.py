"""The protocol's byte counts do not depend on how the reads split a request: a head of exactly
the limit is served, one byte more is refused without the app seeing it, a body that shares a read
with its head reaches the app whole, and a chunked body's trailers are bounded too."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.types import Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.server import ServerState

from consentry.http_protocol import BoundedHttpProtocol, HttpLimits, bounded_http_protocol

LIMITS = HttpLimits(
    max_header_bytes=4096,
    max_header_count=20,
    header_timeout=30.0,
    body_idle_timeout=30.0,
    body_timeout=60.0,
    max_requests_per_connection=100,
)


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(
            name, default
        )


class _Connection:
    """One connection to a protocol whose app answers each request with its body's length."""

    def __init__(self) -> None:
        self.bodies: list[int] = []

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            size, more = 0, True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                size += len(message.get("body", b""))
                more = message.get("more_body", False)
            self.bodies.append(size)
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"%d" % size})

        config = Config(app=app, lifespan="off", log_config=None, proxy_headers=False)
        config.load()
        self.state = ServerState()
        protocol_class = bounded_http_protocol(LIMITS)
        self.protocol: BoundedHttpProtocol = protocol_class(
            config=config, server_state=self.state, app_state={}
        )
        self.transport = _Transport()
        self.protocol.connection_made(self.transport)

    async def send(self, data: bytes, *, read_size: int) -> None:
        for start in range(0, len(data), read_size):
            self.protocol.data_received(data[start : start + read_size])
        while self.state.tasks:
            await asyncio.gather(*self.state.tasks)

    def status(self) -> int:
        return int(bytes(self.transport.written).split(b" ", 2)[1])

    def error(self) -> dict[str, Any]:
        error: dict[str, Any] = json.loads(bytes(self.transport.written).split(b"\r\n\r\n")[1])[
            "error"
        ]
        return error

    def close(self) -> None:
        self.protocol.connection_lost(None)


def _get(size: int) -> bytes:
    """A GET whose head is ``size`` bytes."""
    bare = b"GET / HTTP/1.1\r\nHost: t\r\nX-Pad: \r\n\r\n"
    return bare.replace(b"X-Pad: ", b"X-Pad: " + b"p" * (size - len(bare)))


@pytest.mark.parametrize("read_size", [1, 7, 1000, 1_000_000])
async def test_a_head_of_exactly_the_limit_is_served_however_the_reads_split_it(
    read_size: int,
) -> None:
    connection = _Connection()
    await connection.send(_get(LIMITS.max_header_bytes), read_size=read_size)
    connection.close()

    assert (connection.status(), connection.bodies) == (200, [0])


@pytest.mark.parametrize("read_size", [1, 7, 1000, 1_000_000])
async def test_one_byte_more_is_431_and_the_app_never_sees_it(read_size: int) -> None:
    connection = _Connection()
    await connection.send(_get(LIMITS.max_header_bytes + 1), read_size=read_size)
    connection.close()

    assert (connection.status(), connection.bodies) == (431, [])
    assert connection.error()["details"] == {"limit": "max_header_bytes", "max": 4096}
    assert connection.transport.written.count(b"HTTP/1.1") == 1


async def test_a_read_holding_the_end_of_a_head_and_a_large_body_gives_the_app_all_of_it() -> None:
    connection = _Connection()
    body = b"x" * 100_000
    head = b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body)
    await connection.send(head + body, read_size=1_000_000)
    connection.close()

    assert (connection.status(), connection.bodies) == (200, [100_000])


async def test_trailers_past_twice_the_head_limit_get_431() -> None:
    connection = _Connection()
    head = b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunks = b"5\r\nhello\r\n0\r\nX-Trailer: " + b"t" * (2 * LIMITS.max_header_bytes) + b"\r\n\r\n"
    await connection.send(head + chunks, read_size=1000)
    connection.close()

    assert connection.status() == 431
    assert connection.error()["message"] == (
        "The request's chunk framing and trailers are larger than 4096 bytes (max_header_bytes)."
    )


async def test_the_header_after_the_last_allowed_one_is_431() -> None:
    allowed = _Connection()
    refused = _Connection()

    def with_headers(count: int) -> bytes:
        extra = b"".join(b"X-H%d: v\r\n" % i for i in range(count - 1))
        return b"GET / HTTP/1.1\r\nHost: t\r\n" + extra + b"\r\n"

    await allowed.send(with_headers(LIMITS.max_header_count), read_size=100)
    await refused.send(with_headers(LIMITS.max_header_count + 1), read_size=100)
    allowed.close()
    refused.close()

    assert (allowed.status(), refused.status(), refused.bodies) == (200, 431, [])
    assert refused.error()["details"] == {"limit": "max_header_count", "max": 20}
