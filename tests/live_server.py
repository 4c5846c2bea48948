"""A real uvicorn server for an ASGI app, in the test's own event loop (real HTTP, real
concurrency). Used for the Consentry app and for the local OpenAI-compatible stub."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import uvicorn
from starlette.types import ASGIApp

STARTUP_TIMEOUT_SECONDS = 30.0


class _Server(uvicorn.Server):
    """Sets an event once it listens, so nothing polls ``started``."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.listening.set()


@asynccontextmanager
async def serve_app(app: ASGIApp, *, lifespan: Literal["on", "off"] = "on") -> AsyncIterator[str]:
    """Serve ``app`` on a free loopback port; yield its base URL. A server that fails to start
    (lifespan error, port trouble) fails the test at once instead of waiting for the timeout."""
    server = _Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan=lifespan)
    )
    serving = asyncio.create_task(server.serve(), name="uvicorn-in-loop")
    listening = asyncio.create_task(server.listening.wait())
    done, _ = await asyncio.wait(
        {serving, listening}, timeout=STARTUP_TIMEOUT_SECONDS, return_when="FIRST_COMPLETED"
    )
    if listening not in done:
        listening.cancel()
        server.should_exit = True
        await asyncio.gather(serving, return_exceptions=True)
        raise RuntimeError("the server did not start listening")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(serving, timeout=STARTUP_TIMEOUT_SECONDS)
