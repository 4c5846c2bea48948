"""The LangGraph SDK's runs (``client.runs.stream``, ``create``, ``wait``, ``join``,
``join_stream``, ``cancel``), served by Consentry's one run service: a run here is a
``/v1/chat`` request under another shape (same claim, rate limit, ``Idempotency-Key``, consent
gate and stored events), streamed as the SDK reads it (``_stream``) or answered with the state it
leaves (``_outcome``). Reading runs back is ``run_records``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse

from consentry.api.deps import (
    AssistantsDep,
    IdempotencyKey,
    PrincipalDep,
    RunReaderDep,
    RunsDep,
    SettingsDep,
    ThreadsDep,
    ThreadWriterDep,
)
from consentry.api.last_event_id import RunLastEventId
from consentry.api.responses import ERROR_RESPONSES
from consentry.api.run_requests import RunRequestsDep
from consentry.api.sdk._outcome import run_outcome
from consentry.api.sdk._start import RunStart
from consentry.api.sdk._stream import SdkStream
from consentry.api.sse_response import EventStreamResponse
from consentry.runtime.outgoing import OutgoingEvent
from consentry.runtime.runs import ActiveRun
from consentry.schemas.sdk_runs import RunCreate, SdkRun
from consentry.schemas.threads import CancelAccepted

__all__ = ["router"]

router = APIRouter(tags=["langgraph-sdk"])

_JOIN_MODES = frozenset({"values", "messages-tuple", "custom"})


def _run_start(
    owner: PrincipalDep,
    threads: ThreadsDep,
    writer: ThreadWriterDep,
    assistants: AssistantsDep,
    run_reader: RunReaderDep,
    run_requests: RunRequestsDep,
    idempotency_key: IdempotencyKey = None,
) -> RunStart:
    return RunStart(owner, threads, writer, assistants, run_reader, run_requests, idempotency_key)


RunStartDep = Annotated[RunStart, Depends(_run_start)]


@router.post(
    "/threads/{thread_id}/runs/stream",
    response_class=EventStreamResponse,
    responses=ERROR_RESPONSES,
)
async def stream_run(thread_id: str, body: RunCreate, start: RunStartDep) -> EventStreamResponse:
    """Run the assistant on the thread (``input``, or ``command.resume`` answering what the
    thread waits for) and stream it as the SDK reads it."""
    return await start.stream(body, thread_id, route=f"/threads/{thread_id}/runs/stream")


@router.post("/runs/stream", response_class=EventStreamResponse, responses=ERROR_RESPONSES)
async def stream_threadless_run(body: RunCreate, start: RunStartDep) -> EventStreamResponse:
    """Run the assistant on a new thread and stream it."""
    return await start.stream(body, None, route="/runs/stream")


@router.post("/threads/{thread_id}/runs", responses=ERROR_RESPONSES)
async def create_run(
    thread_id: str, body: RunCreate, start: RunStartDep, run_reader: RunReaderDep
) -> SdkRun:
    """Start a run that goes on in the background; follow it with ``join_stream`` or
    ``join``."""
    run = await start.background(body, thread_id, route=f"/threads/{thread_id}/runs")
    run.events.detach()
    return await run_reader.get(start.owner, run.thread_id, run.run_id)


@router.post("/runs", responses=ERROR_RESPONSES)
async def create_threadless_run(
    body: RunCreate, start: RunStartDep, run_reader: RunReaderDep
) -> SdkRun:
    """Start a run on a new thread in the background (its id is the run's ``thread_id``)."""
    run = await start.background(body, None, route="/runs")
    run.events.detach()
    return await run_reader.get(start.owner, run.thread_id, run.run_id)


@router.post(
    "/threads/{thread_id}/runs/wait",
    response_class=StreamingResponse,
    responses=ERROR_RESPONSES,
)
async def wait_run(
    thread_id: str, body: RunCreate, start: RunStartDep, settings: SettingsDep
) -> StreamingResponse:
    """Run the assistant on the thread and answer with the state it leaves (with
    ``__interrupt__`` when a consent waits, ``__error__`` when it failed)."""
    run = await start.background(body, thread_id, route=f"/threads/{thread_id}/runs/wait")
    return _waiting(run, start.outcome(run), settings.keepalive_seconds)


@router.post("/runs/wait", response_class=StreamingResponse, responses=ERROR_RESPONSES)
async def wait_threadless_run(
    body: RunCreate, start: RunStartDep, settings: SettingsDep
) -> StreamingResponse:
    """Run the assistant on a new thread and answer with the state it leaves."""
    run = await start.background(body, None, route="/runs/wait")
    return _waiting(run, start.outcome(run), settings.keepalive_seconds)


@router.get(
    "/threads/{thread_id}/runs/{run_id}/join",
    response_class=StreamingResponse,
    responses=ERROR_RESPONSES,
)
async def join_run(
    thread_id: str,
    run_id: str,
    owner: PrincipalDep,
    runs: RunsDep,
    run_reader: RunReaderDep,
    threads: ThreadsDep,
    settings: SettingsDep,
) -> StreamingResponse:
    """Wait for the run to end and answer with the state it left (at once if it has ended)."""
    await run_reader.get(owner, thread_id, run_id)  # 404 for a run the thread does not have
    events = await runs.replay(owner, thread_id, run_id)
    ended = ActiveRun(thread_id, run_id, _Replay(events))
    return _waiting(ended, run_outcome(events, threads, owner), settings.keepalive_seconds)


@router.get(
    "/threads/{thread_id}/runs/{run_id}/stream",
    response_class=EventStreamResponse,
    responses={
        **ERROR_RESPONSES,
        400: ERROR_RESPONSES[422] | {"description": "`Last-Event-ID` is not a seq of this thread."},
    },
)
async def join_run_stream(
    thread_id: str,
    run_id: str,
    owner: PrincipalDep,
    threads: ThreadsDep,
    run_reader: RunReaderDep,
    run_requests: RunRequestsDep,
    after: RunLastEventId,
) -> EventStreamResponse:
    """The run's frames after ``Last-Event-ID`` (without one: from the run's start), then live
    while it goes on (``values``, ``messages-tuple`` and ``custom``)."""
    await run_reader.get(owner, thread_id, run_id)  # 404 for a run the thread does not have
    face = SdkStream(threads, owner, _JOIN_MODES, run_id=run_id)
    return await run_requests.join(owner, thread_id, after=after or 0, face=face)


@router.post(
    "/threads/{thread_id}/runs/{run_id}/cancel",
    status_code=202,
    responses=ERROR_RESPONSES,
)
async def cancel_run(
    thread_id: str, run_id: str, owner: PrincipalDep, runs: RunsDep
) -> CancelAccepted:
    """Stop the run at its next step boundary (final reason ``cancelled``); 409
    ``no_active_run`` when it is not the thread's active run."""
    return await runs.cancel(owner, thread_id, run_id=run_id)


@dataclass(frozen=True)
class _Replay:
    """A run this request follows but did not start: nothing to detach from."""

    events: AsyncIterator[OutgoingEvent]

    def listen(self) -> AsyncIterator[OutgoingEvent]:
        return self.events

    def detach(self) -> None:
        """Nothing to stop: the run goes on without any of its readers."""


def _waiting(
    run: ActiveRun, outcome: Coroutine[Any, Any, dict[str, Any]], keepalive_seconds: float
) -> StreamingResponse:
    """The state ``run`` leaves (``outcome``), as a JSON body sent when it ends; until then a
    newline every keepalive period (JSON allows leading whitespace) keeps proxies from closing
    the wait. The headers go at once: ``Location`` is where the SDK waits again after a drop."""

    async def body() -> AsyncIterator[bytes]:
        waited = asyncio.ensure_future(outcome)
        try:
            while not waited.done():
                done, _ = await asyncio.wait({waited}, timeout=keepalive_seconds)
                if not done:
                    yield b"\n"
            yield json.dumps(waited.result()).encode()
        finally:
            waited.cancel()
            run.events.detach()  # the run goes on without this client

    path = f"/threads/{run.thread_id}/runs/{run.run_id}"
    headers = {"Content-Location": path, "Location": f"{path}/join"}
    return StreamingResponse(body(), media_type="application/json", headers=headers)
