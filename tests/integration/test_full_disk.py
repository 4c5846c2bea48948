"""A full disk under SQLite (issue 38): a request that would store something is answered 507
``storage_full`` with ``Retry-After`` and stores nothing, and nothing stored before is lost; a
run whose step or end cannot be stored stops, sending nothing it did not store, and the server
closes and continues it by itself once there is room again (no restart); the same requests
succeed then.

The SQLite file is on a size-limited tmpfs the test mounts (root: CI runs as root) and fills up
(``consentry_tools.chaos.sqlite_faults.SqliteDisk``, the chaos harness's own), so every write
meets ``ENOSPC`` as on a real full disk.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from consentry.api.http.sse_response import RECONNECT_AFTER_MS
from consentry.runtime.runs.execute._run_store import RunStore
from consentry.runtime.runs.execute._step_batching import ProgressBatcher
from consentry.schemas.events import ErrorEvent, Event, FinalEvent
from consentry_tools.chaos.sqlite_faults import SqliteDisk, SqliteStrikeError
from tests.sse import ask_for_note_edit, kinds, parse_events

CLOSED_WITHIN_SECONDS = 30.0


@pytest_asyncio.fixture
async def disk(tmp_path: Path) -> AsyncIterator[SqliteDisk]:
    if os.geteuid() != 0:
        pytest.skip("mounts a size-limited tmpfs: root only (CI runs as root)")
    try:
        async with SqliteDisk.mounted(tmp_path / "disk") as mounted:
            yield mounted
    except SqliteStrikeError as exc:  # (a container without CAP_SYS_ADMIN)
        pytest.skip(f"this machine refuses a tmpfs mount: {exc}")


@pytest.fixture
def db_url(disk: SqliteDisk) -> str:
    return f"sqlite:///{disk.path / 'consentry.db'}"


async def _rejoined_until_final(client: httpx.AsyncClient, thread_id: str) -> list[Event]:
    """The thread's stream, rejoined after each reconnect hint (as a browser's ``EventSource``
    does) until it ends with the run's ``final``."""
    for _ in range(int(CLOSED_WITHIN_SECONDS * 1000 / RECONNECT_AFTER_MS)):
        events = parse_events((await client.get(f"/v1/threads/{thread_id}/stream")).text)
        if events and events[-1].type == "final":
            return events
        await asyncio.sleep(RECONNECT_AFTER_MS / 1000)
    raise AssertionError(f"the run was not closed within {CLOSED_WITHIN_SECONDS} s")


async def _a_run_that_stops(client: httpx.AsyncClient) -> list[Event]:
    """A chat whose run stops on the full disk: what its stream sent (tokens aside), which ends
    with the reconnect hint, neither an ``error`` nor a ``final``."""
    response = await client.post("/v1/chat", json={"message": "What is retrieval?"})
    seen = _durable(parse_events(response.text))
    assert "final" not in kinds(seen)
    assert "error" not in kinds(seen)
    assert response.text.rstrip().endswith(f"retry: {RECONNECT_AFTER_MS}")
    return seen


def _durable(events: list[Event]) -> list[Event]:
    return [event for event in events if event.type != "token"]


def _refused_for_storage(response: httpx.Response) -> None:
    assert response.status_code == 507, response.text
    assert response.json()["error"]["code"] == "storage_full"
    assert int(response.headers["Retry-After"]) > 0


async def test_requests_on_a_full_disk_get_507_store_nothing_and_succeed_once_space_returns(
    client: httpx.AsyncClient, disk: SqliteDisk
) -> None:
    note, asked = await ask_for_note_edit(client)
    consent = asked[-2]
    decision = f"/v1/approvals/{consent.approval_id}/decision"
    key = {"Idempotency-Key": "decide-on-a-full-disk"}
    await disk.fill()
    assert disk.free_bytes() == 0

    _refused_for_storage(await client.post(decision, json={"decision": "approve"}, headers=key))
    _refused_for_storage(
        await client.post("/v1/chat", json={"message": "Hello?", "note_id": note["note_id"]})
    )
    _refused_for_storage(
        await client.put(
            f"/v1/notes/{note['note_id']}",
            json={"version": note["version"], "content": "Typed by hand."},
        )
    )
    # What was stored before is all there, as it was: reads need no room.
    approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
    assert approval["status"] == "pending"
    assert (await client.get(f"/v1/notes/{note['note_id']}")).json() == note
    thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
    assert [c["approval_id"] for c in thread["pending_consents"]] == [consent.approval_id]

    await disk.free()
    decided = await client.post(decision, json={"decision": "approve"}, headers=key)
    assert (decided.status_code, decided.json()["status"]) == (202, "approved"), decided.text
    await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
    edited = (await client.get(f"/v1/notes/{note['note_id']}")).json()
    assert edited["content"] == consent.proposal["proposed_content"]
    assert edited["version"] == note["version"] + 1
    again = await client.post(decision, json={"decision": "approve"}, headers=key)
    assert again.json() == decided.json()  # the same answer, and no second edit
    assert (await client.get(f"/v1/notes/{note['note_id']}")).json() == edited


async def test_a_run_whose_end_meets_a_full_disk_is_closed_by_the_server_once_space_returns(
    client: httpx.AsyncClient, disk: SqliteDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its end and then its failure cannot be stored: nothing of its end is sent (the stream
    ends with the reconnect hint) and the thread still shows the run; once the disk has room,
    the server closes it as far as its graph got, with no restart."""
    store_end = RunStore.store_end

    async def end_on_a_full_disk(self: RunStore, run: Any, outcome: Any, **more: Any) -> None:
        await disk.fill()
        await store_end(self, run, outcome, **more)

    monkeypatch.setattr(RunStore, "store_end", end_on_a_full_disk)
    seen = await _a_run_that_stops(client)
    monkeypatch.setattr(RunStore, "store_end", store_end)
    thread_id, run_id = seen[0].thread_id, seen[0].run_id
    assert (await client.get(f"/v1/threads/{thread_id}")).json()["status"] == "running"

    await disk.free()
    replay = _durable(await _rejoined_until_final(client, thread_id))
    assert replay[: len(seen)] == seen  # what was sent is what is stored, and goes on from there
    final = replay[len(seen)]
    assert isinstance(final, FinalEvent)
    assert (final.run_id, final.reason, final.seq) == (run_id, "completed", seen[-1].seq + 1)


async def test_a_run_whose_step_meets_a_full_disk_is_continued_by_the_server_once_space_returns(
    client: httpx.AsyncClient, disk: SqliteDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not failed: the step was not stored (SQLite rolled it back), so the run stops as a
    process that died would, and once the disk has room the server closes it (``error``
    ``server_restarted``, ``final`` ``failed``) and a recovery run continues its work from its
    last checkpoint, with no restart and no retry asked of the client. A mixed chaos run found
    such a run recorded ``failed`` after its graph had finished and its effect was applied."""
    commit_step = ProgressBatcher.commit_step
    steps = 0

    async def full_at_the_second(self: ProgressBatcher, write: Any) -> None:
        nonlocal steps
        steps += 1
        if steps == 2:
            await disk.fill()
        await commit_step(self, write)

    monkeypatch.setattr(ProgressBatcher, "commit_step", full_at_the_second)
    seen = await _a_run_that_stops(client)
    monkeypatch.setattr(ProgressBatcher, "commit_step", commit_step)
    thread_id, run_id = seen[0].thread_id, seen[0].run_id

    await disk.free()
    replay = _durable(await _rejoined_until_final(client, thread_id))
    assert [e.seq for e in replay] == list(range(1, len(replay) + 1))
    assert replay[: len(seen)] == seen
    error, closed = replay[len(seen) : len(seen) + 2]
    assert isinstance(error, ErrorEvent)
    assert (error.code, error.run_id) == ("server_restarted", run_id)
    assert isinstance(closed, FinalEvent)
    assert (closed.run_id, closed.reason) == (run_id, "failed")
    last = replay[-1]
    assert isinstance(last, FinalEvent)
    assert (last.reason, last.run_id != run_id) == ("completed", True)
    thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")


async def test_a_continuation_that_meets_the_full_disk_again_is_closed_not_continued_again(
    client: httpx.AsyncClient, disk: SqliteDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal that keeps coming back (a disk with room for a run's close but not for its
    step) must not loop: a run is continued once that way, then only closed, and the client's
    ``POST /v1/threads/{id}/retry`` takes it on from there."""
    commit_step = ProgressBatcher.commit_step
    steps: dict[str, int] = {}  # run id → its steps so far, in the order the runs came
    frees: list[asyncio.Task[None]] = []

    async def full_at_the_second_and_at_the_continuations_first(
        self: ProgressBatcher, write: Any
    ) -> None:
        run_id = self._events.run_id
        steps[run_id] = steps.get(run_id, 0) + 1
        first, *later = steps
        if run_id == first and steps[run_id] == 2:  # the test gives the room back
            await disk.fill()
        elif later and run_id == later[0] and steps[run_id] == 1:  # the continuation's first
            await disk.fill()
            frees.append(asyncio.create_task(_free_after(disk, 0.2)))
        await commit_step(self, write)

    monkeypatch.setattr(
        ProgressBatcher, "commit_step", full_at_the_second_and_at_the_continuations_first
    )
    thread_id = (await _a_run_that_stops(client))[0].thread_id

    await disk.free()
    await _rejoined_until_final(client, thread_id)
    await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
    monkeypatch.setattr(ProgressBatcher, "commit_step", commit_step)
    assert frees, "the continuation never stored a step"
    replay = _durable(await _rejoined_until_final(client, thread_id))

    runs = list(dict.fromkeys(e.run_id for e in replay))
    assert len(runs) == 2, runs  # the first run and one continuation, no third
    finals = [e for e in replay if isinstance(e, FinalEvent)]
    assert [(f.run_id, f.reason) for f in finals] == [(runs[0], "failed"), (runs[1], "failed")]
    errors = [e for e in replay if isinstance(e, ErrorEvent)]
    assert [(e.run_id, e.code) for e in errors] == [
        (runs[0], "server_restarted"),
        (runs[1], "server_restarted"),
    ]
    thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    assert (thread["status"], thread["last_reason"]) == ("idle", "failed")
    retried = await client.post(f"/v1/threads/{thread_id}/retry")
    assert retried.status_code == 200, retried.text
    assert parse_events(retried.text)[-1].reason == "completed"


async def _free_after(disk: SqliteDisk, seconds: float) -> None:
    await asyncio.sleep(seconds)
    await disk.free()
