"""Crons on two ``consentry serve`` replicas sharing one PostgreSQL database, with a schedule of
every two seconds: every due tick is taken once, by one replica (a run queued, or a skip
recorded), none doubled and none lost, across a SIGKILL of one replica mid-way; a cron whose
thread waits for a person has its later ticks skipped and audited, not stacked.

Both replicas wake for every tick; the compare-and-set of the cron's ``next_run_at`` in the
transaction that queues the run decides which one takes it (``runtime.crons``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import httpx
from langgraph_sdk import get_client

from tests.postgres import PostgresCluster
from tests.system.replicas import start_replicas

GRAPHS = (
    "progress=tests.graph_forms:progress_writer,"
    "count=tests.integration.raw_interrupt_graphs:counting"
)
ENV = {"CONSENTRY_GRAPHS": GRAPHS, "CONSENTRY_LEASE_SECONDS": "3"}
EVERY_TWO_SECONDS = "* * * * * */2"
TICKS_BEFORE_THE_KILL = 4
TICKS_IN_ALL = 9


async def _audit(http: httpx.AsyncClient, thread_id: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = (await http.get(f"/v1/threads/{thread_id}/audit")).json()[
        "records"
    ]
    return records


async def _cron_records(http: httpx.AsyncClient, thread_id: str) -> list[dict[str, Any]]:
    return [r for r in await _audit(http, thread_id) if r["action"].startswith("cron_")]


async def _until(check: Callable[[], Awaitable[Any]], *, seconds: float = 60) -> Any:
    for _ in range(int(seconds / 0.1)):
        if found := await check():
            return found
        await asyncio.sleep(0.1)
    raise AssertionError("not within the time allowed")


async def test_each_tick_is_taken_once_across_two_replicas_and_a_kill(
    postgres: PostgresCluster,
) -> None:
    async with start_replicas(postgres.new_database(), count=2, env=ENV) as (first, second):
        one = get_client(url=str(first.http.base_url))
        two = get_client(url=str(second.http.base_url))
        steady = (await one.threads.create(graph_id="progress"))["thread_id"]
        asking = (await one.threads.create(graph_id="count"))["thread_id"]
        ask = {"messages": [{"role": "user", "content": "Report"}]}
        reports = await one.crons.create_for_thread(
            steady, "progress", schedule=EVERY_TWO_SECONDS, input=ask
        )
        questions = await one.crons.create_for_thread(
            asking, "count", schedule=EVERY_TWO_SECONDS, input={}
        )

        async def ticks(count: int) -> bool:
            return len(await _cron_records(second.http, steady)) >= count

        await _until(lambda: ticks(TICKS_BEFORE_THE_KILL))
        await first.kill()
        await _until(lambda: ticks(TICKS_IN_ALL))
        await two.crons.delete(reports["cron_id"])
        await two.crons.delete(questions["cron_id"])

        async def all_ended() -> list[dict[str, Any]] | None:
            runs = await two.runs.list(steady, limit=100)
            return runs if all(r["status"] not in ("pending", "running") for r in runs) else None

        runs = await _until(all_ended)
        records = await _cron_records(second.http, steady)
        recovered = {
            r["run_id"]
            for r in await _audit(second.http, steady)
            if r["action"] == "run_started" and r["data"].get("trigger") == "recovery"
        }
        asked = await _cron_records(second.http, asking)
        asked_runs = await two.runs.list(asking, limit=100)
        await one.aclose()
        await two.aclose()

    due = [datetime.fromisoformat(r["data"]["due_at"]) for r in records]
    missed = [r["data"].get("missed", 0) for r in records]
    assert len(due) >= TICKS_IN_ALL
    assert due == sorted(set(due))  # none taken twice
    # None lost: each next due time is two seconds on, or later by the ticks the record before
    # counts as missed (a replica late by more than a period, which CI's load can make).
    assert all(
        b - a == timedelta(seconds=2 * (1 + m))
        for a, b, m in zip(due, due[1:], missed, strict=False)
    )
    ticked = [r["run_id"] for r in records if r["action"] == "cron_ticked"]
    skipped = [r["data"]["reason"] for r in records if r["action"] == "cron_tick_skipped"]
    # (a run held up by the kill: its lease expires before another replica continues it)
    assert set(skipped) <= {"previous_run_waiting", "previous_run_running"}
    # One run per tick, no more; and a run the kill cut short is continued by one recovery run
    # (a new run, started after its lease expired), never by a second tick's.
    assert sorted(r["run_id"] for r in runs if r["run_id"] not in recovered) == sorted(ticked)
    assert len(recovered) <= 1
    assert {r["status"] for r in runs} == {"success"}
    assert asked[0]["action"] == "cron_ticked"
    assert len(asked) >= TICKS_IN_ALL - 1
    # Later ticks wait for the person: skipped while the first run runs, then while it waits.
    assert {r["data"]["reason"] for r in asked[1:]} <= {"previous_run_running", "consent_pending"}
    assert asked[-1]["data"]["reason"] == "consent_pending"
    assert [r["status"] for r in asked_runs] == ["interrupted"]
