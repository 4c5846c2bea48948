"""Several ``consentry serve`` replicas on one PostgreSQL database, driven from an async test.

    async with start_replicas(postgres.new_database(), count=2) as (first, second):
        await first.http.post("/v1/chat", json=...)

The replicas start together (a start blocks a thread for a few seconds: the test's loop keeps
serving the OpenAI stub meanwhile). Each has an ``httpx.AsyncClient`` on its base URL. ``kill()``
SIGKILLs one, as a crash; leaving the block SIGKILLs the others.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import httpx

from tests.system.server import serve_process

__all__ = ["Replica", "start_replicas"]

CLIENT_TIMEOUT_SECONDS = 30.0
KILL_TIMEOUT_SECONDS = 10.0

_Process = subprocess.Popen[bytes]
_Started = tuple[AbstractContextManager[tuple[str, _Process]], str, _Process]


@dataclass(frozen=True)
class Replica:
    """One running replica: a name for failure messages, a client of it, its process."""

    name: str
    http: httpx.AsyncClient
    process: _Process

    async def kill(self) -> None:
        """SIGKILL: no shutdown, no lease given back. Returns once the process is gone."""
        self.process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(self.process.wait, KILL_TIMEOUT_SECONDS)


async def _start(database_url: str, env: dict[str, str] | None) -> _Started:
    manager = serve_process(database_url, env=env)
    base_url, process = await asyncio.to_thread(manager.__enter__)
    return manager, base_url, process


@asynccontextmanager
async def start_replicas(
    database_url: str, *, count: int, env: dict[str, str] | None = None
) -> AsyncIterator[list[Replica]]:
    """Start ``count`` replicas on ``database_url`` at once (their migrations race too)."""
    results = await asyncio.gather(
        *(_start(database_url, env) for _ in range(count)), return_exceptions=True
    )
    started = [r for r in results if not isinstance(r, BaseException)]
    try:
        for result in results:
            if isinstance(result, BaseException):
                raise result
        async with AsyncExitStack() as clients:
            replicas = []
            for number, (_, base_url, process) in enumerate(started, start=1):
                http = httpx.AsyncClient(base_url=base_url, timeout=CLIENT_TIMEOUT_SECONDS)
                await clients.enter_async_context(http)
                replicas.append(Replica(f"replica {number}", http, process))
            yield replicas
    except BaseException as failure:
        # Each replica adds its output to the failure (``serve_process``).
        await _exit_all(started, failure)
        raise
    await _exit_all(started, None)


async def _exit_all(started: list[_Started], failure: BaseException | None) -> None:
    kind = type(failure) if failure is not None else None
    traceback = failure.__traceback__ if failure is not None else None
    await asyncio.gather(
        *(
            asyncio.to_thread(manager.__exit__, kind, failure, traceback)
            for manager, _, _ in started
        )
    )
