"""The LangGraph SDK's runs (``client.runs.stream``, ``create``, ``wait``, ``join``,
``join_stream``, ``cancel``), served by Consentry's one run service: a run here is a
``/v1/chat`` request under another shape (same claim, rate limit, ``Idempotency-Key``, consent
gate and stored events), streamed as the SDK reads it (``_stream``) or answered with the state it
leaves (``_outcome``). Reading runs back is ``run_records``."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import StreamingResponse

from consentry.api.http.deps import (
    AssistantsDep,
    IdempotencyKey,
    PrincipalDep,
    RunRecordsDep,
    RunRollbackDep,
    RunsDep,
    SettingsDep,
    ThreadsDep,
    ThreadWriterDep,
    WebhookHostsDep,
)
from consentry.api.http.last_event_id import RunLastEventId
from consentry.api.http.responses import ERROR_RESPONSES
from consentry.api.http.sse_response import EventStreamResponse
from consentry.api.run_requests import Followed, RunRequestsDep
from consentry.api.sdk._batches import start_batch
from consentry.api.sdk._outcome import run_outcome
from consentry.api.sdk._queue import RunQueueDep
from consentry.api.sdk._start import RunStart
from consentry.api.sdk._stream import SdkStream
from consentry.api.sdk._wait import waiting
from consentry.errors import InvalidRequestError
from consentry.runtime.runs import RunQueue, Waiter, cancel_many
from consentry.schemas.sdk_runs import (
    STREAM_MODES,
    CancelledRuns,
    RunCancelManyRequest,
    RunCreate,
    SdkRun,
)
from consentry.schemas.threads import CancelAccepted
from consentry.settings import Settings

__all__ = ["router"]

router = APIRouter(tags=["langgraph-sdk"])

_JOIN_MODES = frozenset({"values", "updates", "tasks", "messages-tuple", "custom"})


async def _run_start(  # async: FastAPI runs a plain `def` dependency in its thread pool
    owner: PrincipalDep,
    threads: ThreadsDep,
    writer: ThreadWriterDep,
    assistants: AssistantsDep,
    run_records: RunRecordsDep,
    run_requests: RunRequestsDep,
    queue: RunQueueDep,
    rollback: RunRollbackDep,
    webhook_hosts: WebhookHostsDep,
    idempotency_key: IdempotencyKey = None,
) -> RunStart:
    return RunStart(
        owner,
        threads,
        writer,
        assistants,
        run_records,
        run_requests,
        queue,
        rollback,
        idempotency_key,
        webhook_hosts,
    )


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
    thread_id: str, body: RunCreate, start: RunStartDep, run_records: RunRecordsDep
) -> SdkRun:
    """Start a run that goes on in the background (or queue it: ``enqueue``); follow it with
    ``join_stream`` or ``join``."""
    run = await start.create(body, thread_id, route=f"/threads/{thread_id}/runs")
    return await run_records.get(start.owner, run.thread_id, run.run_id)


@router.post("/runs", responses=ERROR_RESPONSES)
async def create_threadless_run(
    body: RunCreate, start: RunStartDep, run_records: RunRecordsDep
) -> SdkRun:
    """Start a run on a new thread in the background (its id is the run's ``thread_id``)."""
    run = await start.create(body, None, route="/runs")
    return await run_records.get(start.owner, run.thread_id, run.run_id)


@router.post("/runs/batch", responses=ERROR_RESPONSES)
async def create_run_batch(
    body: Annotated[list[RunCreate], Body(min_length=1, max_length=100)],
    start: RunStartDep,
    run_records: RunRecordsDep,
) -> list[SdkRun]:
    """Start each run on a new thread, as `POST /runs` does, in order. What the request alone
    tells is checked for every run first (its assistant, its fields): one refused is the
    batch's answer, and none starts. A refusal only a run's start tells (a note that does not
    exist, the rate limit, the tenant's cap on active runs) stops the batch there: the runs
    before it have started, and the error's `details.started` names them. With an
    `Idempotency-Key`, each run is keyed by it and its place, and checked against the whole
    batch: sent again, the batch answers with the same runs; another batch under the key is
    422 `idempotency_key_reused`."""
    started = await start_batch(start, body, route="/runs/batch")
    return [await run_records.get(start.owner, run.thread_id, run.run_id) for run in started]


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
    return await _wait(start, body, thread_id, settings, route=f"/threads/{thread_id}/runs/wait")


@router.post("/runs/wait", response_class=StreamingResponse, responses=ERROR_RESPONSES)
async def wait_threadless_run(
    body: RunCreate, start: RunStartDep, settings: SettingsDep
) -> StreamingResponse:
    """Run the assistant on a new thread and answer with the state it leaves."""
    return await _wait(start, body, None, settings, route="/runs/wait")


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
    run_records: RunRecordsDep,
    threads: ThreadsDep,
    settings: SettingsDep,
    queue: RunQueueDep,
) -> StreamingResponse:
    """Wait for the run to end and answer with the state it left (at once if it has ended; a
    queued run's wait begins with its start)."""
    run = await run_records.get(owner, thread_id, run_id)  # 404 for a run the thread lacks
    if run.multitask_strategy == "enqueue":  # it waits in the queue, or left it unstarted
        waiter = queue.expect(thread_id, run_id)
        outcome = partial(run_outcome, queue.events(owner, waiter), threads, owner)
        closed = partial(_forget_wait, queue, waiter)
        return waiting(thread_id, run_id, outcome, settings.keepalive_seconds, on_close=closed)
    events = await runs.replay(owner, thread_id, run_id)
    outcome = partial(run_outcome, events, threads, owner)
    return waiting(thread_id, run_id, outcome, settings.keepalive_seconds)


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
    run_records: RunRecordsDep,
    run_requests: RunRequestsDep,
    queue: RunQueueDep,
    after: RunLastEventId,
    stream_mode: Annotated[
        list[str] | None,
        Query(
            description="The modes to send, any of `runs.stream`'s (none, or an empty value as "
            "the SDK sends without one: `values`, `updates`, `tasks`, `messages-tuple`, "
            "`custom`)."
        ),
    ] = None,
) -> EventStreamResponse:
    """The run's frames after ``Last-Event-ID`` (without one: from the run's start), then live
    while it goes on (the modes asked, or ``_JOIN_MODES``); a queued run's from its start, once
    it starts."""
    run = await run_records.get(owner, thread_id, run_id)  # 404 for a run the thread lacks
    modes = _join_modes(stream_mode)
    if run.multitask_strategy == "enqueue":  # it waits in the queue, or left it unstarted
        face = SdkStream(threads, owner, modes)

        async def begin() -> Followed:
            waiter = queue.expect(thread_id, run_id, graph_modes=face.graph_modes)
            events = queue.events(owner, waiter)
            return Followed(events, thread_id, run_id, partial(queue.forget, waiter))

        return await run_requests.follow(owner, begin, face=face)
    # A subgraph's frames too, when the run makes them (its request asked) or kept them.
    if after is None:
        face = SdkStream(threads, owner, modes, subgraphs=True)
        return await run_requests.follow_run(owner, thread_id, run_id, face=face)
    face = SdkStream(threads, owner, modes, run_id=run_id, subgraphs=True)
    return await run_requests.join(owner, thread_id, after=after, face=face)


def _join_modes(asked: list[str] | None) -> frozenset[str]:
    modes = frozenset(mode for mode in asked or () if mode)  # the SDK sends ``stream_mode=``
    if unknown := sorted(modes - frozenset(STREAM_MODES)):
        raise InvalidRequestError(
            f"Unknown stream mode {unknown[0]!r}.",
            details={"stream_mode": unknown, "served": list(STREAM_MODES)},
        )
    return modes or _JOIN_MODES


@router.post(
    "/threads/{thread_id}/runs/{run_id}/cancel",
    status_code=202,
    responses=ERROR_RESPONSES,
)
async def cancel_run(
    thread_id: str,
    run_id: str,
    owner: PrincipalDep,
    runs: RunsDep,
    queue: RunQueueDep,
    rollback: RunRollbackDep,
    wait: Annotated[
        bool, Query(description="Answer once the run has ended (its `final` is stored).")
    ] = False,
    action: Annotated[
        Literal["interrupt", "rollback"],
        Query(
            description="`interrupt`: the run stops, what it wrote is kept; `rollback`: it "
            "stops, what it wrote of the thread's state is deleted and so is the run (its "
            "events and audit records are kept); the answer comes once that is done."
        ),
    ] = "interrupt",
) -> CancelAccepted:
    """Stop the run at its next step boundary (final reason ``cancelled``), or take it out of
    the run queue while it waits; 409 ``no_active_run`` when it is neither running nor
    waiting. ``wait``: the answer comes once the run has ended."""
    if action == "rollback":
        await rollback.run(queue, owner, thread_id, run_id)
        return CancelAccepted(thread_id=thread_id, run_id=run_id)
    if await queue.cancel(owner, thread_id, run_id):
        return CancelAccepted(thread_id=thread_id, run_id=run_id)
    accepted = await runs.cancel(owner, thread_id, run_id=run_id)
    if wait:
        await runs.wait_for_end(owner, thread_id, run_id)
    return accepted


@router.post("/runs/cancel", responses=ERROR_RESPONSES)
async def cancel_runs(
    body: RunCancelManyRequest,
    owner: PrincipalDep,
    runs: RunsDep,
    queue: RunQueueDep,
    rollback: RunRollbackDep,
    action: Annotated[
        Literal["interrupt", "rollback"],
        Query(description="`rollback`: each run is rolled back as `runs.cancel` rolls one back."),
    ] = "interrupt",
) -> CancelledRuns:
    """Cancel the caller's runs: those of `thread_id` (only `run_ids`, when given; a thread
    of another is 404), or of all its threads, by `status` (`pending`: waiting in a queue,
    `running`: active, `all`). Each waiting one is taken out of its queue, each active one
    stopped as `runs.cancel` stops it; a run that ended meanwhile is passed over."""
    cancelled = await cancel_many(
        queue,
        runs,
        owner,
        thread_id=body.thread_id,
        run_ids=body.run_ids,
        status=body.status or "all",
        rollback=rollback if action == "rollback" else None,
    )
    return CancelledRuns(cancelled=[{"thread_id": t, "run_id": r} for t, r in cancelled])


async def _wait(
    start: RunStart, body: RunCreate, thread_id: str | None, settings: Settings, *, route: str
) -> StreamingResponse:
    """Start (or queue) the run and answer with the state it leaves."""
    waited = await start.waited(body, thread_id, route=route)
    return waiting(
        waited.thread_id,
        waited.run_id,
        waited.outcome,
        settings.keepalive_seconds,
        on_close=waited.closed,
    )


def _forget_wait(queue: RunQueue, waiter: Waiter, _: bool) -> None:
    queue.forget(waiter)
