"""A replica frozen past its lease (SIGSTOP: a stalled VM, a stop-the-world pause) wakes up to
find its run taken over, and nothing it writes after that is visible: the thread's checkpoints
are one history, the taker's after the takeover, and its events are the taker's.

Two ``consentry serve`` replicas on one PostgreSQL database, every checkpoint kept
(``CONSENTRY_CHECKPOINT_RETENTION=all``) so that a write of the frozen replica would show in the
thread's history. The frozen replica's run is in the middle of its model call (held by the
OpenAI stub) when it is stopped; the other replica takes the run over once the lease expired
and finishes it; then the held call is answered and the frozen replica continued (SIGCONT): its
graph finishes the step it was in and writes its checkpoint, which the lease's fencing token
refuses (``storage.checkpoints``), and its run stops.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import httpx

from consentry.schemas.events import Event, RunStartedEvent
from tests.openai_stub import OpenAIStub
from tests.postgres import PostgresCluster
from tests.sse import kinds, next_event, parse_events
from tests.system.replicas import start_replicas

WAIT_SECONDS = 30.0
LEASE_SECONDS = 6
"""Long enough that a replica slowed by a loaded machine (CI: two cores, two replicas, the test
workers) still renews its lease before the test freezes it: with 3 s the other replica once
took the run over first ("took over 1 run(s) of a replica that stopped" in its log)."""
QUESTION = "What is retrieval?"
CLASSIFIED_AS_ANSWER = '{"intent": "answer", "query": "retrieval"}'
ANSWER = "Retrieval finds the relevant documents first."
HELD_MID_ANSWER = ["run_started", "step", "step"]
RUN_MARK = "consentry_run_id"


async def _within(awaitable: Awaitable[Any]) -> Any:
    async with asyncio.timeout(WAIT_SECONDS):
        return await awaitable


async def _history(http: httpx.AsyncClient, thread_id: str) -> list[dict[str, Any]]:
    """Every checkpoint of the thread, newest first (the LangGraph SDK's route)."""
    response = await http.post(f"/threads/{thread_id}/history", json={"limit": 1000})
    assert response.status_code == 200, response.text
    states: list[dict[str, Any]] = response.json()
    return states


async def _events(http: httpx.AsyncClient, thread_id: str) -> list[Event]:
    response = await http.get(f"/v1/threads/{thread_id}/stream", headers={"Last-Event-ID": "0"})
    assert response.status_code == 200, response.text
    return parse_events(response.text)


async def _rest(lines: AsyncIterator[str]) -> list[Event]:
    return parse_events("\n".join([line async for line in lines]) + "\n\n")


async def test_a_replica_frozen_past_its_lease_writes_nothing_once_its_run_was_taken_over(
    postgres: PostgresCluster, stub: OpenAIStub
) -> None:
    stub.reply(CLASSIFIED_AS_ANSWER)
    stub.hold("The frozen replica's answer, which no one must ever see.")
    env = {
        **stub.server_env(),
        "CONSENTRY_LEASE_SECONDS": str(LEASE_SECONDS),
        "CONSENTRY_CHECKPOINT_RETENTION": "all",
    }
    async with start_replicas(postgres.new_database(), count=2, env=env) as (frozen, taker):
        async with frozen.http.stream("POST", "/v1/chat", json={"message": QUESTION}) as origin:
            lines = origin.aiter_lines()
            seen = [await _within(next_event(lines)) for _ in range(3)]
            assert kinds(seen) == HELD_MID_ANSWER
            await _within(stub.holding.wait())
            thread_id, frozen_run = seen[0].thread_id, seen[0].run_id
            stub.reply(ANSWER)  # the taker's model call
            frozen.process.send_signal(signal.SIGSTOP)
            try:
                # The taker finds the lease expired, closes the frozen run and continues it.
                joined = await _within(
                    taker.http.get(
                        f"/v1/threads/{thread_id}/stream",
                        headers={"Last-Event-ID": str(seen[-1].seq)},
                    )
                )
                recovered = [e for e in parse_events(joined.text) if e.type != "token"]
                assert kinds(recovered) == [
                    "error",
                    "final",
                    "run_started",
                    "step",
                    "message",
                    "final",
                ]
                taker_run = next(e for e in recovered if isinstance(e, RunStartedEvent)).run_id
                history = await _history(taker.http, thread_id)
                events = await _events(taker.http, thread_id)
            finally:
                stub.release()  # the frozen replica's call is answered: it finishes its step...
                frozen.process.send_signal(signal.SIGCONT)
            # ...and tries to write it: refused, its run stops and its stream ends (no final).
            rest = await _within(_rest(lines))
        assert "final" not in kinds(rest)

        assert await _history(taker.http, thread_id) == history
        assert await _events(taker.http, thread_id) == events
        # One history: each checkpoint the child of the one before it, the frozen run's up to
        # the takeover and the taker's after it.
        parents = [h["parent_checkpoint"] for h in history[:-1]]
        assert parents == [h["checkpoint"] for h in history[1:]]
        marks = [h["metadata"].get(RUN_MARK) for h in reversed(history)]
        cut = marks.index(taker_run)
        assert set(marks[:cut]) == {frozen_run}
        assert set(marks[cut:]) == {taker_run}
        assert "The frozen replica's answer" not in str(history)
        assert [e.content for e in events if e.type == "message"] == [ANSWER]  # type: ignore[attr-defined]
