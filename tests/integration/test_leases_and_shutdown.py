"""Run leases and shutdown: a run holds its thread under a lease with a fencing token; a run that
lost its lease stores nothing more; a shutdown stops runs at a step boundary for the next process
to continue; recovery takes over only runs whose lease expired, once.

Runs are held mid-way by the scripted OpenAI-compatible stub (``hold`` + ``holding``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

import consentry.runtime.runs.execute._executor
from consentry.api.http.sse_response import RECONNECT_AFTER_MS
from consentry.app import create_app
from consentry.runtime.runs.execute._run_store import RunStore
from consentry.runtime.runs.recover._dead_runs import Recovery, close_dead_run, dead_runs
from consentry.schemas.events import ErrorEvent, Event, FinalEvent, RunStartedEvent, StepEvent
from consentry.services import Services
from consentry.settings import Settings
from consentry.storage import runs as runs_repo
from consentry.storage.db.database import Database
from consentry.storage.leases import LeaseLostError
from consentry.storage.tables import events as events_table
from consentry.storage.tables import runs, threads
from tests.conftest import ManualClock
from tests.lifespan import running
from tests.openai_stub import OpenAIStub
from tests.sse import kinds, parse_events

WAIT_SECONDS = 10.0
CLASSIFIED_AS_ANSWER = '{"intent": "answer", "query": "retrieval"}'
ANSWER = "Retrieval finds the relevant documents first."
QUESTION = {"message": "What is retrieval?"}
RETRY_HINT = f"retry: {RECONNECT_AFTER_MS}"


class App:
    def __init__(self, client: httpx.AsyncClient, services: Services) -> None:
        self.client = client
        self.services = services


@pytest.fixture
def open_app(db_url: str, clock: ManualClock, stub: OpenAIStub) -> Callable[..., Any]:
    """``async with open_app() as app``: the app on the test's database, its model the stub."""

    @asynccontextmanager
    async def _open(**overrides: Any) -> AsyncIterator[App]:
        settings = Settings(database_url=db_url, **stub.app_settings(**overrides))
        fastapi_app = create_app(settings, clock=clock)
        async with running(fastapi_app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                yield App(client, fastapi_app.state.services)

    return _open


async def _within(awaitable: Awaitable[Any]) -> Any:
    async with asyncio.timeout(WAIT_SECONDS):
        return await awaitable


async def _lease(services: Services, thread_id: str) -> Any:
    async with services.db.read() as conn:
        row = (
            await conn.execute(
                sa.select(
                    threads.c.status,
                    threads.c.active_run_id,
                    threads.c.lease_owner,
                    threads.c.lease_expires_at,
                    threads.c.fencing_token,
                ).where(threads.c.id == thread_id)
            )
        ).one()
    return row


async def _stored_types(services: Services, run_id: str) -> list[str]:
    async with services.db.read() as conn:
        rows = await conn.execute(
            sa.select(events_table.c.type)
            .where(events_table.c.run_id == run_id)
            .order_by(events_table.c.seq)
        )
        return [row.type for row in rows]


async def _run_status(services: Services, run_id: str) -> str:
    async with services.db.read() as conn:
        return str(await conn.scalar(sa.select(runs.c.status).where(runs.c.id == run_id)))


async def _join_after(client: httpx.AsyncClient, thread_id: str, seq: int) -> list[Event]:
    response = await client.get(f"/v1/threads/{thread_id}/stream", params={"last_event_id": seq})
    return parse_events(response.text)


async def _close_dead_runs(app: App, *, lease_expired_by: datetime) -> list[str]:
    """What a recovering process does first: close every run whose lease expired (each in its
    own transaction, fenced); the thread ids it closed."""
    closed = []
    for run in await dead_runs(app.services.db, lease_expired_by=lease_expired_by):
        try:
            async with app.services.db.write() as conn:
                await close_dead_run(
                    conn,
                    run,
                    Recovery(),
                    leases=app.services.executor.leases,
                    clock=app.services.clock,
                )
        except LeaseLostError:
            continue
        closed.append(run.thread_id)
    return closed


def _nodes(events: list[Event]) -> list[str]:
    return [e.node for e in events if isinstance(e, StepEvent)]


async def _take_over(db: Database, thread_id: str) -> None:
    """What another process's takeover writes: a new run id, owner and fencing token."""
    async with db.write() as conn:
        await conn.execute(
            threads.update()
            .where(threads.c.id == thread_id)
            .values(
                active_run_id="run-of-another-process",
                lease_owner="another-process",
                fencing_token=threads.c.fencing_token + 1,
            )
        )


async def _held_run(app: App, stub: OpenAIStub) -> tuple[asyncio.Task[httpx.Response], str]:
    """A chat request whose run is held mid-answer, once the run has sent its start and both
    steps (progress goes out at most ``PROGRESS_DELAY_SECONDS`` late); the task and the thread
    id."""
    request = asyncio.create_task(app.client.post("/v1/chat", json=QUESTION))
    await _within(stub.holding.wait())
    (run,) = app.services.executor._active.values()
    await _within(_sent_steps(run.events, 2))
    return request, run.events.thread_id


async def _sent_steps(events: Any, count: int) -> None:
    steps = 0
    async for event in events.join(after_seq=0):
        steps += event.type == "step"
        if steps == count:
            return


async def test_a_claim_leases_the_thread_to_this_process_with_a_new_fencing_token(
    open_app: Callable[..., Any], stub: OpenAIStub, clock: ManualClock
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold(ANSWER)
    async with open_app(lease_seconds=20) as app:
        request, thread_id = await _held_run(app, stub)
        claimed_at = clock.now
        lease = await _lease(app.services, thread_id)

        assert lease.status == "running"
        assert lease.lease_owner == app.services.executor.leases.owner
        assert lease.fencing_token == 1
        assert (
            claimed_at + timedelta(seconds=19)
            < lease.lease_expires_at
            <= claimed_at + (timedelta(seconds=20))
        )

        clock.advance(seconds=15)
        await app.services.executor.leases.renew()  # one heartbeat
        renewed = await _lease(app.services, thread_id)
        assert renewed.lease_expires_at > clock.now + timedelta(seconds=19)
        assert renewed.fencing_token == 1

        stub.release()
        events = parse_events((await _within(request)).text)
        assert kinds(events)[-1] == "final"
        ended = await _lease(app.services, thread_id)
        assert (ended.status, ended.active_run_id, ended.lease_owner, ended.lease_expires_at) == (
            "idle",
            None,
            None,
            None,
        )

        stub.reply(CLASSIFIED_AS_ANSWER)
        stub.reply(ANSWER)
        response = await app.client.post("/v1/chat", json={**QUESTION, "thread_id": thread_id})
        assert kinds(parse_events(response.text))[-1] == "final"
        assert (await _lease(app.services, thread_id)).fencing_token == 2


async def test_a_run_whose_lease_was_taken_over_stores_nothing_more_and_its_stream_says_reconnect(
    open_app: Callable[..., Any], stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold(ANSWER)
    async with open_app() as app:
        request, thread_id = await _held_run(app, stub)
        await _take_over(app.services.db, thread_id)

        stub.release()  # the answer's chunk is the run's next write: refused by the token
        response = await _within(request)
        await _within(app.services.executor.wait_for_runs())

        events = parse_events(response.text)
        assert kinds(events) == ["run_started", "step", "step"]
        assert RETRY_HINT in response.text
        run_id = events[0].run_id
        assert await _stored_types(app.services, run_id) == ["run_started", "step", "step"]
        assert await _run_status(app.services, run_id) == "running"  # the new owner ends it
        lease = await _lease(app.services, thread_id)
        assert (lease.active_run_id, lease.lease_owner, lease.status) == (
            "run-of-another-process",
            "another-process",
            "running",
        )


def _taken_over_before_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process takes every run's thread over right before the run stores its end."""
    store_end = RunStore.store_end

    async def taken_over_first(self: RunStore, run: Any, outcome: Any, **more: Any) -> None:
        await _take_over(self._db, run.events.thread_id)
        await store_end(self, run, outcome, **more)

    monkeypatch.setattr(RunStore, "store_end", taken_over_first)


async def test_a_run_whose_lease_was_taken_over_before_its_end_stores_none_of_its_end(
    open_app: Callable[..., Any], stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's closing transaction (its last events, the run's end, the thread's release) is
    fenced by the release, which comes last: refused, none of it is stored. The refusal alone
    says the lease was lost (on PostgreSQL it fails the commit): here the lease cannot be read
    after it (as when the database blinks), and the run still stops as one that lost it."""
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)

    async def cannot_tell(self: RunStore, run: Any) -> bool:
        return True  # what ``_holds_lease`` says when the lease cannot be read

    _taken_over_before_its_end(monkeypatch)
    monkeypatch.setattr(RunStore, "_holds_lease", cannot_tell)
    async with open_app() as app:
        response = await _within(app.client.post("/v1/chat", json=QUESTION))
        await _within(app.services.executor.wait_for_runs())

        events = parse_events(response.text)
        assert "final" not in kinds(events)
        assert RETRY_HINT in response.text
        run_id = events[0].run_id
        stored = await _stored_types(app.services, run_id)
        assert "final" not in stored
        assert stored == [k for k in kinds(events) if k != "token"]  # what was sent, no more
        assert await _run_status(app.services, run_id) == "running"  # the new owner ends it
        lease = await _lease(app.services, thread_id := events[0].thread_id)
        assert (lease.active_run_id, lease.lease_owner, lease.status) == (
            "run-of-another-process",
            "another-process",
            "running",
        )
        transcript = await app.client.get(f"/v1/threads/{thread_id}")
        assert ANSWER not in transcript.text


async def test_a_run_taken_over_whose_end_fails_on_what_the_new_owner_wrote_stops_quietly(
    open_app: Callable[..., Any], stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease is checked last in the closing transaction: a run taken over may first meet
    the new owner's rows (the same consent, recorded again). That is a lost lease, not a failed
    run: no ``error`` and no ``final`` go to its listeners, nothing of its end is stored."""
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.reply(ANSWER)
    record_run_end = runs_repo.record_run_end

    async def meets_the_new_owners_row(*args: Any, **kwargs: Any) -> None:
        await record_run_end(*args, **kwargs)
        raise IntegrityError("INSERT INTO approvals", {}, Exception("duplicate key"))

    _taken_over_before_its_end(monkeypatch)
    monkeypatch.setattr(runs_repo, "record_run_end", meets_the_new_owners_row)
    async with open_app() as app:
        response = await _within(app.client.post("/v1/chat", json=QUESTION))
        await _within(app.services.executor.wait_for_runs())

        events = parse_events(response.text)
        assert kinds(events) == ["run_started", "step", "step", "message"]
        assert RETRY_HINT in response.text
        stored = await _stored_types(app.services, events[0].run_id)
        assert stored == ["run_started", "step", "step", "message"]
        assert await _run_status(app.services, events[0].run_id) == "running"


async def test_a_heartbeat_that_finds_the_lease_taken_stops_the_run_mid_step(
    open_app: Callable[..., Any], stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold(ANSWER)
    async with open_app() as app:
        request, thread_id = await _held_run(app, stub)
        await _take_over(app.services.db, thread_id)

        await app.services.executor.leases.renew()  # the model call is still held
        response = await _within(request)

        events = parse_events(response.text)
        assert kinds(events) == ["run_started", "step", "step"]
        assert RETRY_HINT in response.text
        assert app.services.executor.active_stream(thread_id) is None
        assert await _stored_types(app.services, events[0].run_id) == [
            "run_started",
            "step",
            "step",
        ]


async def test_recovery_takes_over_a_run_only_once_its_lease_expired_and_only_once(
    open_app: Callable[..., Any], stub: OpenAIStub, clock: ManualClock
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold(ANSWER)
    async with open_app(lease_seconds=30) as app:
        executor = app.services.executor
        request, thread_id = await _held_run(app, stub)

        assert await _close_dead_runs(app, lease_expired_by=clock()) == []

        # Two processes find the same expired lease at once: one closes the run.
        later = clock.now + timedelta(seconds=31)
        first, second = await asyncio.gather(
            _close_dead_runs(app, lease_expired_by=later),
            _close_dead_runs(app, lease_expired_by=later),
        )
        assert sorted([first, second]) == [[], [thread_id]]

        stub.release()  # the live run's next write is fenced out
        response = await _within(request)
        await _within(executor.wait_for_runs())
        seen = parse_events(response.text)
        assert kinds(seen) == ["run_started", "step", "step"]
        assert RETRY_HINT in response.text

        stored = await _stored_types(app.services, seen[0].run_id)
        assert stored == ["run_started", "step", "step", "error", "final"]
        joined = await _join_after(app.client, thread_id, seen[-1].seq)
        error, final = joined
        assert isinstance(error, ErrorEvent)
        assert error.code == "server_restarted"
        assert isinstance(final, FinalEvent)
        assert final.reason == "failed"
        assert error.seq > seen[-1].seq
        lease = await _lease(app.services, thread_id)
        assert (lease.status, lease.active_run_id, lease.lease_owner) == ("idle", None, None)


async def test_a_shutdown_stops_a_run_at_its_next_step_boundary_and_the_next_start_continues_it(
    open_app: Callable[..., Any], stub: OpenAIStub
) -> None:
    stub.hold(CLASSIFIED_AS_ANSWER)  # the run is inside its first step
    stub.reply("Answered by the next process.")
    async with open_app() as app:
        request = asyncio.create_task(app.client.post("/v1/chat", json=QUESTION))
        await _within(stub.holding.wait())
        shutdown = asyncio.create_task(app.services.executor.shutdown())
        await asyncio.sleep(0)  # the shutdown has asked every run to stop at its next boundary
        stub.release()  # the step ends, its checkpoint is saved, and the run stops there
        await _within(shutdown)
        response = await _within(request)
        seen = parse_events(response.text)
        thread_id = seen[0].thread_id
        lease = await _lease(app.services, thread_id)

    assert kinds(seen) == ["run_started", "step"]
    assert _nodes(seen) == ["analyze_message"]
    assert RETRY_HINT in response.text
    # Left for the next process: still running, its lease given up.
    assert (lease.status, lease.lease_owner) == ("running", None)
    assert lease.lease_expires_at is not None
    calls_before = len(stub.requests)

    async with open_app() as restarted:
        await _within(restarted.services.executor.wait_for_runs())
        joined = await _join_after(restarted.client, thread_id, seen[-1].seq)

    assert len(stub.requests) == calls_before + 1  # only the answer: the classifier's step held
    assert kinds(joined) == ["error", "final", "run_started", "step", "step", "message", "final"]
    started = joined[2]
    assert isinstance(started, RunStartedEvent)
    assert started.trigger == "recovery"
    # The finished step's stored writes are applied (and reported) again, not re-run.
    assert _nodes(joined) == ["analyze_message", "answer_question"]
    final = joined[-1]
    assert isinstance(final, FinalEvent)
    assert final.reason == "completed"


async def test_a_run_that_does_not_reach_a_step_boundary_in_the_grace_period_is_taken_over(
    open_app: Callable[..., Any], stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(consentry.runtime.runs.execute._executor, "SHUTDOWN_GRACE_SECONDS", 0.01)
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold(ANSWER)
    async with open_app() as app:
        request, thread_id = await _held_run(app, stub)
        await _within(app.services.executor.shutdown())  # cancelled mid-step
        response = await _within(request)
        seen = parse_events(response.text)
        stored = await _stored_types(app.services, seen[0].run_id)
    stub.release()

    assert kinds(seen) == ["run_started", "step", "step"]
    assert RETRY_HINT in response.text
    assert stored == ["run_started", "step", "step"]
    stub.reply("Answered again.")
    async with open_app() as restarted:
        await _within(restarted.services.executor.wait_for_runs())
        joined = await _join_after(restarted.client, thread_id, seen[-1].seq)
        thread = (await restarted.client.get(f"/v1/threads/{thread_id}")).json()

    assert kinds(joined) == ["error", "final", "run_started", "step", "message", "final"]
    assert _nodes(joined) == ["answer_question"]  # the interrupted step runs again
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")
