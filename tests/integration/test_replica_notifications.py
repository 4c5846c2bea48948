"""Two app instances on one PostgreSQL database (two replicas in one process, each with its own
engine, pools and LISTEN connection): what one stores wakes the other, without polling.

The process-level proofs (separate uvicorn processes, SIGKILL, takeover) are in
``tests/system/test_replicas.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import datetime
from typing import Any

import httpx
import pytest

from consentry.app import create_app
from consentry.runtime.consents import ExpiryAlarm
from consentry.runtime.replicas import _log_follower as log_follower
from consentry.runtime.runs import RunExecutor
from consentry.services import Services
from consentry.settings import Settings
from tests.conftest import ManualClock
from tests.live_server import serve_app
from tests.openai_stub import OpenAIStub
from tests.postgres import PostgresCluster
from tests.sse import ask_for_note_edit, kinds, next_event, parse_events

WAIT_SECONDS = 10.0
CLASSIFIED_AS_ANSWER = '{"intent": "answer", "query": "retrieval"}'


class Replica:
    def __init__(self, http: httpx.AsyncClient, services: Services) -> None:
        self.http = http
        self.services = services


@asynccontextmanager
async def _replicas(
    database_url: str, clock: ManualClock, **overrides: Any
) -> AsyncIterator[tuple[Replica, Replica]]:
    settings = Settings(database_url=database_url, **overrides)
    async with AsyncExitStack() as stack:
        started = []
        for _ in range(2):
            app = create_app(settings, clock=clock)
            base_url = await stack.enter_async_context(serve_app(app))
            http = await stack.enter_async_context(
                httpx.AsyncClient(base_url=base_url, timeout=WAIT_SECONDS)
            )
            started.append(Replica(http, app.state.services))
        yield started[0], started[1]


async def test_a_stream_on_another_replica_follows_the_run_live_woken_by_notifications(
    postgres: PostgresCluster,
    clock: ManualClock,
    stub: OpenAIStub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Far beyond the test's timeout: only a notification can wake the follower in time.
    monkeypatch.setattr(log_follower, "FOLLOW_RECHECK_SECONDS", 3600.0)
    model = stub.app_settings()
    async with _replicas(postgres.new_database(), clock, **model) as (first, second):
        await _follow_on_the_other_replica(first, second, stub)


async def _follow_on_the_other_replica(first: Replica, second: Replica, stub: OpenAIStub) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold("Retrieval finds the documents first.")
    async with first.http.stream(
        "POST", "/v1/chat", json={"message": "What is retrieval?"}
    ) as started:
        lines = started.aiter_lines()
        seen = [await next_event(lines) for _ in range(3)]  # run_started, step, step
        async with asyncio.timeout(WAIT_SECONDS):
            await stub.holding.wait()
        thread_id = seen[0].thread_id
        assert second.services.executor.active_stream(thread_id) is None

        async with second.http.stream(
            "GET", f"/v1/threads/{thread_id}/stream", headers={"Last-Event-ID": str(seen[0].seq)}
        ) as joined:
            follower = joined.aiter_lines()
            caught_up = [await next_event(follower) for _ in range(2)]
            stub.release()
            async with asyncio.timeout(WAIT_SECONDS):
                rest = parse_events("\n".join([line async for line in follower]))

    assert [(e.seq, e.type) for e in caught_up] == [(e.seq, e.type) for e in seen[1:]]
    assert kinds(rest) == ["message", "final"]  # tokens stay with the executing replica
    assert rest[-1].reason == "completed"  # type: ignore[union-attr]
    assert rest[0].seq > seen[-1].seq


async def test_a_consent_asked_on_one_replica_is_planned_by_the_expiry_sweeper_of_another(
    postgres: PostgresCluster, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: asyncio.Queue[tuple[int, datetime]] = asyncio.Queue()
    original = ExpiryAlarm.consent_requested

    def record(alarm: ExpiryAlarm, expires_at: datetime) -> None:
        told.put_nowait((id(alarm), expires_at))
        original(alarm, expires_at)

    # Before the replicas exist: each hands its alarm's method to its notifications when built.
    monkeypatch.setattr(ExpiryAlarm, "consent_requested", record)
    async with _replicas(postgres.new_database(), clock) as (first, _):
        _, asked = await ask_for_note_edit(first.http)
        consent = asked[-2]
        alarms: dict[int, datetime] = {}
        async with asyncio.timeout(WAIT_SECONDS):
            while len(alarms) < 2:  # the asking replica's alarm, and the other's (only notified)
                alarm, deadline = await told.get()
                alarms[alarm] = deadline

    assert set(alarms.values()) == {consent.expires_at}  # type: ignore[union-attr]


async def test_a_cancel_sent_to_another_replica_stops_the_run_where_it_executes(
    postgres: PostgresCluster,
    clock: ManualClock,
    stub: OpenAIStub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = stub.app_settings()
    stub.hold(CLASSIFIED_AS_ANSWER)  # the run is inside its first step
    told = asyncio.Event()
    cancel_run = RunExecutor.cancel_run

    def cancel_and_tell(executor: RunExecutor, run_id: str) -> None:
        cancel_run(executor, run_id)
        if executor.running:  # the replica executing the run (the other runs nothing)
            told.set()

    # Before the replicas exist: each hands its executor's method to its notifications when built.
    monkeypatch.setattr(RunExecutor, "cancel_run", cancel_and_tell)
    async with _replicas(postgres.new_database(), clock, **model) as (first, second):
        request = asyncio.create_task(first.http.post("/v1/chat", json={"message": "Why?"}))
        async with asyncio.timeout(WAIT_SECONDS):
            await stub.holding.wait()
        (thread,) = (await second.http.get("/v1/threads")).json()["threads"]

        cancelled = await second.http.post(f"/v1/threads/{thread['thread_id']}/cancel")
        async with asyncio.timeout(WAIT_SECONDS):
            await told.wait()  # delivered by notification to the replica executing the run
        stub.release()  # the step ends; the run stops at that boundary
        async with asyncio.timeout(WAIT_SECONDS):
            events = parse_events((await request).text)
        idle = await second.http.post(f"/v1/threads/{thread['thread_id']}/cancel")

    assert cancelled.status_code == 202, cancelled.text
    assert cancelled.json()["run_id"] == events[0].run_id
    assert kinds(events) == ["run_started", "step", "final"]
    assert events[-1].reason == "cancelled"  # type: ignore[union-attr]
    assert len(stub.requests) == 1  # stopped at the boundary: the answer was never asked for
    assert idle.status_code == 409
    assert idle.json()["error"]["code"] == "no_active_run"
