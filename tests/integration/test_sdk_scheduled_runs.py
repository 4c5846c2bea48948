"""Runs started later and threads deleted after their run, through the real ``langgraph-sdk``
client over real HTTP: ``after_seconds`` keeps a run ``pending`` in its thread's queue until it
is due (a run asked meanwhile is not held behind it; a restart keeps the wait; a run on a new
thread gets its thread at once), and ``on_completion="delete"`` deletes the thread a run was
made on once the run has ended, but never one a consent waits on."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError

from tests.conftest import ManualClock
from tests.integration.gate_graph import SERVED as GATE
from tests.langgraph_client import sdk_client

PROGRESS = "progress=tests.graph_forms:progress_writer"


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def _said(state: Any) -> list[str]:
    return [m["content"] for m in state["values"].get("messages", [])]


async def _gone(sdk: LangGraphClient, thread_id: str) -> None:
    """Wait until the thread has been deleted (in the background, after its run's end)."""
    for _ in range(200):
        try:
            await sdk.threads.get(thread_id)
        except NotFoundError:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"thread {thread_id} was not deleted")


async def _ran_within(sdk: LangGraphClient, thread_id: str, run_id: str, *, seconds: float) -> bool:
    """Whether the run succeeds within ``seconds``, read without waiting on it (which would
    wake its thread's queue)."""
    for _ in range(int(seconds / 0.05)):
        if (await sdk.runs.get(thread_id, run_id))["status"] == "success":
            return True
        await asyncio.sleep(0.05)
    return False


async def test_a_run_after_seconds_waits_until_it_is_due_and_does_not_hold_others(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=PROGRESS) as (client, _), sdk_client(client) as sdk:
        thread_id = (await sdk.threads.create(graph_id="progress"))["thread_id"]
        later = await sdk.runs.create(thread_id, "progress", input=_ask("Later"), after_seconds=1)
        waiting = await sdk.runs.get(thread_id, later["run_id"])
        now = await sdk.runs.wait(thread_id, "progress", input=_ask("Now"))  # not behind it
        still = await sdk.runs.get(thread_id, later["run_id"])
        clock.advance(seconds=2)
        # Nothing wakes the queue now: it starts the run once its own wait is over.
        on_its_own = await _ran_within(sdk, thread_id, later["run_id"], seconds=5)
        done = await sdk.runs.join(thread_id, later["run_id"])
        ran = await sdk.runs.get(thread_id, later["run_id"])
        state = await sdk.threads.get_state(thread_id)

    assert on_its_own  # (a join would wake the queue: not how it started)
    assert waiting["status"] == "pending"
    assert now["messages"][-1]["content"] == "Reported."
    assert still["status"] == "pending"
    assert done["messages"][-1]["content"] == "Reported."
    assert ran["status"] == "success"
    assert _said(state) == ["Now", "Reported.", "Later", "Reported."]


async def test_a_run_after_seconds_on_a_new_thread_gets_it_at_once_and_survives_a_restart(
    open_live: Any, clock: ManualClock
) -> None:
    async with open_live(graphs=PROGRESS) as (client, _), sdk_client(client) as sdk:
        later = await sdk.runs.create(None, "progress", input=_ask("Later"), after_seconds=30)
        thread_id, run_id = later["thread_id"], later["run_id"]
        thread = await sdk.threads.get(thread_id)
        before = await sdk.runs.get(thread_id, run_id)
    clock.advance(seconds=31)
    async with open_live(graphs=PROGRESS) as (client, _), sdk_client(client) as sdk:
        done = await sdk.runs.join(thread_id, run_id)
        after = await sdk.runs.get(thread_id, run_id)

    assert thread["thread_id"] == thread_id
    assert before["status"] == "pending"
    assert done["messages"][-1]["content"] == "Reported."
    assert after["status"] == "success"


async def test_a_new_threads_run_with_on_completion_delete_deletes_it_after_its_end(
    open_live: Any, gate: asyncio.Event
) -> None:
    gate.set()
    async with open_live(graphs=f"{PROGRESS},{GATE}") as (client, _), sdk_client(client) as sdk:
        finished = await sdk.runs.wait(None, "progress", input=_ask("Plan"), on_completion="delete")
        created = await sdk.runs.create(None, "progress", input=_ask("Go"), on_completion="delete")
        await _gone(sdk, created["thread_id"])
        asking = await sdk.runs.create(None, "gate", input=_ask("Hello"), on_completion="delete")
        await sdk.runs.join(asking["thread_id"], asking["run_id"])
        kept = await sdk.threads.get(asking["thread_id"])  # a consent waits on it
        await asyncio.sleep(0.2)
        still = await sdk.threads.get(asking["thread_id"])
        default = await sdk.runs.create(None, "progress", input=_ask("Keep"))
        await sdk.runs.join(default["thread_id"], default["run_id"])
        with_thread = await sdk.threads.create(graph_id="progress")
        on_path = await sdk.runs.create(
            with_thread["thread_id"], "progress", input=_ask("Mine"), on_completion="delete"
        )
        await sdk.runs.join(with_thread["thread_id"], on_path["run_id"])
        await asyncio.sleep(0.2)
        kept_default = await sdk.threads.get(default["thread_id"])
        kept_path = await sdk.threads.get(with_thread["thread_id"])
        for _ in range(200):  # the first thread is deleted in the background too
            threads = {t["thread_id"] for t in await sdk.threads.search()}
            if len(threads) == 3:
                break
            await asyncio.sleep(0.05)

    assert finished["messages"][-1]["content"] == "Reported."
    assert kept["status"] == still["status"] == "interrupted"
    assert kept_default["thread_id"] == default["thread_id"]
    assert kept_path["thread_id"] == with_thread["thread_id"]
    assert created["thread_id"] not in threads
    assert threads == {asking["thread_id"], default["thread_id"], with_thread["thread_id"]}


async def test_after_seconds_out_of_range_is_refused_by_name(open_live: Any) -> None:
    async with open_live(graphs=PROGRESS) as (client, _):
        answer = await client.post(
            "/runs",
            json={"assistant_id": "progress", "input": _ask("x"), "after_seconds": -1},
        )

    error = answer.json()["error"]
    assert (answer.status_code, error["code"]) == (422, "request_invalid")
    assert error["details"]["errors"][0]["loc"] == ["body", "after_seconds"]
