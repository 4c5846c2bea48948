"""A real uvicorn server for an app, in the test's own event loop (real HTTP, real concurrency)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI

STARTUP_TIMEOUT_SECONDS = 30.0


class _Server(uvicorn.Server):
    """Sets an event once it listens, so nothing polls ``started``."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        self.listening.set()


@asynccontextmanager
async def serve_app(app: FastAPI) -> AsyncIterator[str]:
    """Serve ``app`` (lifespan included) on a free loopback port; yield its base URL."""
    server = _Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    try:
        await asyncio.wait_for(server.listening.wait(), STARTUP_TIMEOUT_SECONDS)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
