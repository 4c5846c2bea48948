"""Deleting and rolling back runs through the real ``langgraph-sdk`` client over real HTTP:
``runs.delete`` hides an ended run (its audit trail and events are kept) and takes a waiting one
out of its queue; ``runs.cancel(action="rollback")``, ``runs.cancel_many(action="rollback")``
and ``multitask_strategy="rollback"`` cut the active run and delete what it wrote of the
thread's state, so the thread goes on from where the run started; a cut that only interrupts
keeps it; with ``CONSENTRY_CHECKPOINT_RETENTION=latest`` a rollback is refused by name."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError

from tests.integration import gate_graph
from tests.integration.gate_graph import SERVED
from tests.langgraph_client import sdk_client


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def _answered_turn(sdk: LangGraphClient, gate: asyncio.Event) -> tuple[str, list[str]]:
    """A thread with one whole turn ("Hello", the consent answered "yes"): its id and run ids
    (the message's, then the answer's)."""
    gate.set()
    asked = await sdk.runs.wait(None, "gate", input=_ask("Hello"))
    assert asked["__interrupt__"][0]["value"] == {"question": "Go on?"}  # type: ignore[index]
    thread_id = (await sdk.threads.search())[0]["thread_id"]
    await sdk.runs.wait(thread_id, "gate", command={"resume": "yes"})
    gate.clear()
    gate_graph.REACHED.clear()
    return thread_id, [run["run_id"] for run in reversed(await sdk.runs.list(thread_id))]


async def _held(sdk: LangGraphClient, thread_id: str, text: str) -> str:
    """A run of ``text`` on the thread, held at the gate: its id."""
    created = await sdk.runs.create(thread_id, "gate", input=_ask(text))
    await asyncio.wait_for(gate_graph.REACHED.wait(), 10)
    gate_graph.REACHED.clear()
    return str(created["run_id"])


async def _busy_thread(
    sdk: LangGraphClient, gate: asyncio.Event
) -> tuple[str, list[str], str, str]:
    """A thread after one whole turn, with a run held at the gate and one waiting behind it:
    its id, the turn's run ids, the held run's and the waiting one's."""
    thread_id, turn = await _answered_turn(sdk, gate)
    held = await _held(sdk, thread_id, "Again")
    waiting = await sdk.runs.create(thread_id, "gate", input=_ask("Queued"))
    return thread_id, turn, held, str(waiting["run_id"])


def _said(state: Any) -> list[str]:
    return [m["content"] for m in state["values"].get("messages", [])]


async def _audit(client: httpx.AsyncClient, thread_id: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = (await client.get(f"/v1/threads/{thread_id}/audit")).json()[
        "records"
    ]
    return records


async def test_a_deleted_run_is_no_longer_shown_and_its_audit_records_stay(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, (asked, answered) = await _answered_turn(sdk, gate)
        running = await _held(sdk, thread_id, "Again")
        with pytest.raises(ConflictError) as still_running:
            await sdk.runs.delete(thread_id, running)
        waiting = await sdk.runs.create(thread_id, "gate", input=_ask("Later"))
        await sdk.runs.delete(thread_id, waiting["run_id"])  # taken out of its queue
        await sdk.runs.delete(thread_id, asked)
        with pytest.raises(NotFoundError) as gone:
            await sdk.runs.get(thread_id, asked)
        with pytest.raises(NotFoundError) as twice:
            await sdk.runs.delete(thread_id, asked)
        gate.set()
        await sdk.runs.join(thread_id, running)
        listed = [run["run_id"] for run in await sdk.runs.list(thread_id)]
        state = await sdk.threads.get_state(thread_id)
        audit = await _audit(client, thread_id)

    assert still_running.value.response.json()["error"]["code"] == "run_in_progress"
    assert gone.value.response.json()["error"]["code"] == "run_not_found"
    assert twice.value.response.status_code == 404
    assert listed == [running, answered]  # the deleted and the dropped waiting one are not
    assert "Later" not in _said(state)  # the waiting run never started
    assert _said(state) == ["Hello", "Done: yes", "Again"]  # a deletion changes no state
    asked_trail = [r["action"] for r in audit if r["run_id"] == asked]
    assert asked_trail[0] == "run_started"
    assert asked_trail[-1] == "run_deleted"


async def test_cancel_with_rollback_deletes_the_run_and_what_it_wrote(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, (_, answered) = await _answered_turn(sdk, gate)
        before = await sdk.threads.get_state(thread_id)
        cut = await _held(sdk, thread_id, "Again")
        await sdk.runs.cancel(thread_id, cut, action="rollback")
        after = await sdk.threads.get_state(thread_id)
        listed = [run["run_id"] for run in await sdk.runs.list(thread_id)]
        with pytest.raises(NotFoundError):
            await sdk.runs.get(thread_id, cut)
        history = await sdk.threads.get_history(thread_id, limit=50)
        audit = await _audit(client, thread_id)

        # An interrupting cut, for contrast, keeps what the run wrote.
        kept = await _held(sdk, thread_id, "Once more")
        await sdk.runs.cancel(thread_id, kept, wait=True)
        interrupted = await sdk.threads.get_state(thread_id)

        gate.set()
        went_on = await sdk.runs.wait(thread_id, "gate", input=_ask("Next"))

    assert _said(after) == _said(before) == ["Hello", "Done: yes"]
    assert after["checkpoint"]["checkpoint_id"] == before["checkpoint"]["checkpoint_id"]
    assert listed == [answered, listed[-1]]  # the cut run is gone
    assert all(
        checkpoint["metadata"].get("consentry_run_id") != cut for checkpoint in history
    )  # nothing it wrote is left
    rolled = [r for r in audit if r["action"] == "run_rolled_back"]
    assert [r["run_id"] for r in rolled] == [cut]
    assert rolled[0]["data"]["checkpoint_id"] == before["checkpoint"]["checkpoint_id"]
    assert rolled[0]["data"]["dropped"]
    assert "Once more" in _said(interrupted)
    assert went_on["__interrupt__"][0]["value"] == {"question": "Go on?"}  # type: ignore[index]


async def test_the_rollback_strategy_cuts_the_active_run_and_starts_from_where_it_started(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, (asked, answered), cut, waiting = await _busy_thread(sdk, gate)
        replacing = await sdk.runs.create(
            thread_id, "gate", input=_ask("Instead"), multitask_strategy="rollback"
        )
        await asyncio.wait_for(gate_graph.REACHED.wait(), 10)  # it started, at the gate
        gate.set()
        done = await sdk.runs.join(thread_id, replacing["run_id"])
        state = await sdk.threads.get_state(thread_id)
        listed = [run["run_id"] for run in await sdk.runs.list(thread_id)]

    assert done["__interrupt__"][0]["value"] == {"question": "Go on?"}  # type: ignore[index]
    assert _said(state) == ["Hello", "Done: yes", "Instead"]
    assert listed == [replacing["run_id"], answered, asked]
    assert cut not in listed  # rolled back
    assert waiting not in listed  # dropped from the queue


async def test_cancel_many_with_rollback_rolls_each_run_back(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, (asked, answered), cut, waiting = await _busy_thread(sdk, gate)
        answer = await client.post(
            "/runs/cancel", params={"action": "rollback"}, json={"thread_id": thread_id}
        )
        state = await sdk.threads.get_state(thread_id)
        listed = [run["run_id"] for run in await sdk.runs.list(thread_id)]

    assert answer.status_code == 200
    assert {r["run_id"] for r in answer.json()["cancelled"]} == {cut, waiting}
    assert _said(state) == ["Hello", "Done: yes"]
    assert listed == [answered, asked]


async def test_a_rollback_is_refused_by_name_when_only_the_newest_checkpoint_is_kept(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with (
        open_live(graphs=SERVED, checkpoint_retention="latest") as (client, _),
        sdk_client(client) as sdk,
    ):
        thread_id, _ = await _answered_turn(sdk, gate)
        cut = await _held(sdk, thread_id, "Again")
        with pytest.raises(ConflictError) as refused:
            await sdk.runs.cancel(thread_id, cut, action="rollback")
        run = await sdk.runs.get(thread_id, cut)
        state = await sdk.threads.get_state(thread_id)

    assert refused.value.response.json()["error"]["code"] == "rollback_unavailable"
    assert (run["status"], run["reason"]) == ("interrupted", "cancelled")  # cut, and kept
    assert "Again" in _said(state)


async def test_a_run_queued_behind_a_rolled_back_one_starts_from_where_that_one_started(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, _, cut, waiting = await _busy_thread(sdk, gate)
        await sdk.runs.cancel(thread_id, cut, action="rollback")
        await asyncio.wait_for(gate_graph.REACHED.wait(), 10)  # the queued run, at the gate
        gate.set()
        done = await sdk.runs.join(thread_id, waiting)
        state = await sdk.threads.get_state(thread_id)
        audit = await _audit(client, thread_id)

    assert done["__interrupt__"][0]["value"] == {"question": "Go on?"}  # type: ignore[index]
    assert _said(state) == ["Hello", "Done: yes", "Queued"]  # nothing of the cut run's
    assert [r["run_id"] for r in audit if r["action"] == "run_rolled_back"] == [cut]
