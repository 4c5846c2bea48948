"""The run queue as a route dependency (made with the app's lifespan: ``_start.open_run_queue``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from consentry.runtime.runs import RunQueue

__all__ = ["RunQueueDep"]


async def _run_queue(request: Request) -> RunQueue:
    queue: RunQueue = request.app.state.run_queue
    return queue


RunQueueDep = Annotated[RunQueue, Depends(_run_queue)]
