"""The run queue: made with the app's lifespan (:func:`open_run_queue`), and a route dependency;
the cron scheduler that queues crons' runs in it (:func:`scheduling_crons`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Annotated, Any

from fastapi import Depends, Request
from pydantic import ValidationError

from consentry.api.run_requests import RunRequests
from consentry.api.sdk._start import RunStart
from consentry.errors import InvalidRequestError
from consentry.principal import Principal
from consentry.runtime.crons import CronScheduler
from consentry.runtime.runs import ActiveRun, RunQueue
from consentry.schemas.chat import ChatRequest
from consentry.schemas.sdk_runs import RunCreate
from consentry.services import Services

__all__ = ["RunQueueDep", "open_run_queue", "scheduling_crons"]


async def _run_queue(request: Request) -> RunQueue:
    queue: RunQueue = request.app.state.run_queue
    return queue


RunQueueDep = Annotated[RunQueue, Depends(_run_queue)]


@asynccontextmanager
async def open_run_queue(services: Services, run_requests: RunRequests) -> AsyncIterator[RunQueue]:
    """The run queue of the app's lifespan, draining the threads runs wait on."""

    async def prepare(owner: Principal, thread_id: str, sent: dict[str, Any]) -> ChatRequest:
        start = RunStart(
            owner,
            services.threads,
            services.thread_writer,
            services.assistants,
            services.run_records,
            run_requests,
            queue,
            services.run_rollback,
            idempotency_key=None,
            webhook_hosts=services.webhook_hosts,
        )
        try:
            body = RunCreate.model_validate(sent)
        except ValidationError as exc:  # queued by a release that took what this one refuses
            raise InvalidRequestError(
                "The queued run's request is not one this server takes.",
                code="request_invalid",
                details={"errors": exc.errors(include_url=False, include_context=False)},
            ) from None
        request = await start.chat_request(body, thread_id, queued=True)
        run_requests.check(request)
        return request

    async def started(metadata: dict[str, Any] | None, run: ActiveRun) -> None:
        if metadata:
            await services.run_records.keep_metadata(run.run_id, metadata)

    queue = RunQueue(
        db=services.db, runs=services.runs, clock=services.clock, prepare=prepare, started=started
    )
    await queue.start()
    try:
        yield queue
    finally:
        await queue.stop()


@asynccontextmanager
async def scheduling_crons(services: Services, queue: RunQueue) -> AsyncIterator[None]:
    """The crons' ticks taken while the app serves, by every process that runs graphs (not an
    API-only replica)."""
    if services.settings.role == "api":
        yield
        return
    scheduler = CronScheduler(
        db=services.db,
        clock=services.clock,
        queue=queue,
        threads=services.thread_writer,
        assistants=services.assistants,
        notifications=services.notifications,
        metrics=services.metrics,
        orphan_after=timedelta(seconds=services.settings.lease_seconds),
    )
    scheduler.start()
    try:
        yield
    finally:
        await scheduler.stop()
