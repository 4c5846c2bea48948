"""A run whose database goes away (issue 38): nothing of it is sent that was not stored, and it
is continued from what was.

- A run whose end cannot be stored, nor its failure after it, sends nothing of its end: its
  stream ends without a ``final``, with the reconnect hint, and the thread keeps the run for a
  takeover (or, on SQLite, the next start) to close and continue it.
- On PostgreSQL a run whose write meets the database gone (a connection cut, a restart, a
  failover) stores nothing more (the write whose answer never came may have committed) and
  gives its lease up; a takeover continues it from its last checkpoint. On SQLite, the file of
  this one process, a driver error other than SQLite refusing a write for now fails it with the
  retryable ``database_unavailable`` (a refusal stops it: ``test_full_disk.py``).

The failures are injected where the run meets them (``RunStore.store_end``,
``ProgressBatcher.commit_step``), as the driver raises them.
"""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
import pytest
import sqlalchemy as sa

from consentry.api.http.sse_response import RECONNECT_AFTER_MS
from consentry.runtime.runs.execute._run_store import RunStore
from consentry.runtime.runs.execute._step_batching import ProgressBatcher
from consentry.schemas.events import ErrorEvent, Event, FinalEvent
from consentry.settings import Settings
from consentry.storage.tables import events as events_table
from consentry.storage.tables import threads
from tests.conftest import ManualClock
from tests.sse import QUESTION, kinds, parse_events

RETRY_HINT = f"retry: {RECONNECT_AFTER_MS}"
LEASE_SECONDS = Settings().lease_seconds


async def _stored_types(client: httpx.AsyncClient, thread_id: str) -> list[tuple[str, str]]:
    db = client.services.db  # type: ignore[attr-defined]
    async with db.read() as conn:
        rows = await conn.execute(
            sa.select(events_table.c.run_id, events_table.c.type)
            .where(events_table.c.thread_id == thread_id)
            .order_by(events_table.c.seq)
        )
        return [(row.run_id, row.type) for row in rows]


async def _thread(client: httpx.AsyncClient, thread_id: str) -> Any:
    db = client.services.db  # type: ignore[attr-defined]
    async with db.read() as conn:
        query = sa.select(threads.c.status, threads.c.active_run_id, threads.c.lease_owner).where(
            threads.c.id == thread_id
        )
        return (await conn.execute(query)).one()


async def _taken_over(client: httpx.AsyncClient, clock: ManualClock, *, given_up: bool) -> None:
    """What a replica's takeover does once the run's lease is over (``given_up`` by the run, or
    expired): close it as far as it got, and continue it from its last checkpoint."""
    services = client.services  # type: ignore[attr-defined]
    if not given_up:
        assert await services.runs.take_over_dead_runs(lease_expired_by=clock()) == 0
        clock.advance(seconds=LEASE_SECONDS)
    assert await services.runs.take_over_dead_runs(lease_expired_by=clock()) == 1
    await services.executor.wait_for_runs()


def _durable(events: list[Event]) -> list[Event]:
    """What is stored of what a client received (not the tokens)."""
    return [event for event in events if event.type != "token"]


def _database_gone() -> sa.exc.OperationalError:
    return sa.exc.OperationalError(
        "COMMIT", None, psycopg.OperationalError("server closed the connection unexpectedly")
    )


@pytest.mark.parametrize("failure", ["disk_full", "database_gone"])
async def test_a_run_whose_end_and_failure_cannot_be_stored_sends_nothing_of_its_end(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, clock: ManualClock, failure: str
) -> None:
    """On PostgreSQL a database gone as the run ends stops it at once (its lease given up); any
    other failure, or SQLite, tries to store the run's failure first."""

    async def cannot_store(self: RunStore, run: Any, outcome: Any, **more: Any) -> None:
        if failure == "database_gone":
            raise _database_gone()
        raise RuntimeError("no space left on device")

    store_end = RunStore.store_end
    monkeypatch.setattr(RunStore, "store_end", cannot_store)
    response = await client.post("/v1/chat", json={"message": QUESTION})
    seen = _durable(parse_events(response.text))
    run_id, thread_id = seen[0].run_id, seen[0].thread_id

    assert "final" not in kinds(seen)
    assert "error" not in kinds(seen)
    assert response.text.rstrip().endswith(RETRY_HINT)
    stored = await _stored_types(client, thread_id)
    assert [kind for _, kind in stored] == kinds(seen)  # what was sent, and only that
    assert (await _thread(client, thread_id)).status == "running"

    monkeypatch.setattr(RunStore, "store_end", store_end)
    postgres = client.services.db.is_postgres  # type: ignore[attr-defined]
    await _taken_over(client, clock, given_up=postgres and failure == "database_gone")
    replay = parse_events((await client.get(f"/v1/threads/{thread_id}/stream")).text)
    assert replay[:-1] == seen  # its graph had finished: the takeover closes it as it ended
    final = replay[-1]
    assert isinstance(final, FinalEvent)
    assert (final.run_id, final.reason, final.seq) == (run_id, "completed", seen[-1].seq + 1)
    assert (await _thread(client, thread_id)).status == "idle"


async def test_a_run_that_loses_the_database_mid_step_stores_nothing_more(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, clock: ManualClock
) -> None:
    """PostgreSQL: the run stops as if its process had, gives its lease up, and a takeover
    continues it from its last checkpoint. SQLite: it fails, retryably."""
    commit_step = ProgressBatcher.commit_step
    steps = 0

    async def cut_at_the_second(self: ProgressBatcher, write: Any) -> None:
        nonlocal steps
        steps += 1
        if steps == 2:
            raise _database_gone()
        await commit_step(self, write)

    monkeypatch.setattr(ProgressBatcher, "commit_step", cut_at_the_second)
    response = await client.post("/v1/chat", json={"message": QUESTION})
    await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
    monkeypatch.setattr(ProgressBatcher, "commit_step", commit_step)
    seen = _durable(parse_events(response.text))
    run_id, thread_id = seen[0].run_id, seen[0].thread_id
    stored = await _stored_types(client, thread_id)

    if client.services.db.dialect == "sqlite":  # type: ignore[attr-defined]
        error, final = seen[-2:]
        assert isinstance(error, ErrorEvent)
        assert (error.code, error.retryable) == ("database_unavailable", True)
        assert isinstance(final, FinalEvent)
        assert final.reason == "failed"
        assert [kind for _, kind in stored] == kinds(seen)
        return

    assert "final" not in kinds(seen)
    assert response.text.rstrip().endswith(RETRY_HINT)
    assert [kind for _, kind in stored] == kinds(seen)
    lease = await _thread(client, thread_id)
    assert (lease.status, lease.active_run_id, lease.lease_owner) == ("running", run_id, None)

    await _taken_over(client, clock, given_up=True)
    replay = parse_events((await client.get(f"/v1/threads/{thread_id}/stream")).text)
    assert [e.seq for e in replay] == list(range(1, len(replay) + 1))
    assert replay[: len(seen)] == seen
    error, final = replay[len(seen) : len(seen) + 2]
    assert isinstance(error, ErrorEvent)
    assert error.code == "server_restarted"
    assert isinstance(final, FinalEvent)
    assert final.run_id == run_id
    assert isinstance(replay[-1], FinalEvent)
    assert (replay[-1].reason, replay[-1].run_id != run_id) == ("completed", True)
