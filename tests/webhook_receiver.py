"""A local webhook receiver the tests start: a tiny ASGI app on a free loopback port that keeps
every post it gets (headers and raw body) and answers each with the next scripted status (200
once the script is used up; a 3xx points to :data:`REDIRECT_PATH` of the same receiver)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.types import Receive, Scope, Send

from tests.live_server import serve_app

__all__ = ["REDIRECT_PATH", "Post", "Receiver", "serve_receiver"]

REDIRECT_PATH = "/redirected"


@dataclass(frozen=True)
class Post:
    path: str
    headers: dict[str, str]
    body: bytes
    status: int
    """What the receiver answered (0: nothing, a held post)."""

    @property
    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data


@dataclass
class Receiver:
    url: str = ""
    posts: list[Post] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    """The statuses of the next posts, in order (then 200)."""
    held: int = 0
    """How many of the next posts are kept unanswered until :meth:`release` (a sender killed
    mid-post)."""
    _released: asyncio.Event = field(default_factory=asyncio.Event)
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status = self.statuses.pop(0) if self.statuses else 200
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        hold = self.held > 0
        self.held -= hold
        if hold:
            status = 0  # never answered
        async with self._arrived:
            self.posts.append(Post(scope["path"], headers, body, status))
            self._arrived.notify_all()
        if hold:
            await self._released.wait()
            return
        location = [(b"location", REDIRECT_PATH.encode())] if 300 <= status < 400 else []
        await send({"type": "http.response.start", "status": status, "headers": location})
        await send({"type": "http.response.body", "body": b""})

    def release(self) -> None:
        """Let the held posts' handlers end (their senders are gone)."""
        self._released.set()

    async def wait_for(self, count: int) -> list[Post]:
        """The first ``count`` posts, once they have arrived (bounded: 20 s)."""
        async with asyncio.timeout(20), self._arrived:
            await self._arrived.wait_for(lambda: len(self.posts) >= count)
        return self.posts[:count]


@asynccontextmanager
async def serve_receiver() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    async with serve_app(receiver, lifespan="off") as base_url:
        receiver.url = f"{base_url}/hook"
        try:
            yield receiver
        finally:
            receiver.release()
