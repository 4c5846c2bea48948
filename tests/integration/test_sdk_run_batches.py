"""Many runs at once on the LangGraph SDK face, through the real ``langgraph-sdk`` client over
real HTTP: ``runs.cancel_many`` (one thread's runs, or all the caller's by status, or some by
id: the waiting ones taken out of their queues first, the active ones cut as ``runs.cancel``
cuts one) and ``runs.create_batch`` (each a run on a new thread, all checked before any starts,
an ``Idempotency-Key`` naming the whole batch)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.integration.gate_graph import SERVED
from tests.langgraph_client import sdk_client

HELLO = {"messages": [{"role": "user", "content": "Hello"}]}
QUESTION = {"messages": [{"role": "user", "content": "What is retrieval?"}]}


async def _busy_thread(sdk: LangGraphClient) -> tuple[str, str, str]:
    """A thread whose run waits at the gate, and a run queued behind it: (thread, held run,
    queued run)."""
    held = await sdk.runs.create(None, "gate", input=HELLO)
    thread_id = held["thread_id"]
    queued = await sdk.runs.create(thread_id, "gate", input=HELLO, multitask_strategy="enqueue")
    return thread_id, held["run_id"], queued["run_id"]


async def _status(sdk: LangGraphClient, thread_id: str, run_id: str) -> tuple[str, str | None]:
    run = await sdk.runs.get(thread_id, run_id)
    return run["status"], run.get("reason")


async def test_cancel_many_cancels_a_threads_waiting_runs_then_its_active_one(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, held, queued = await _busy_thread(sdk)
        answer = await client.post("/runs/cancel", json={"thread_id": thread_id})
        await sdk.runs.join(thread_id, held)  # its step is cut within half a second
        statuses = [await _status(sdk, thread_id, run) for run in (held, queued)]

    assert answer.status_code == 200, answer.text
    assert answer.json()["cancelled"] == [
        {"thread_id": thread_id, "run_id": queued},  # the waiting one first
        {"thread_id": thread_id, "run_id": held},
    ]
    assert statuses == [("interrupted", "cancelled"), ("interrupted", "cancelled")]


async def test_cancel_many_by_status_takes_only_the_callers_runs_in_that_state(
    open_live: Any, gate: asyncio.Event
) -> None:
    keys = "ka=acme:alice,kb=acme:bob"
    async with open_live(graphs=SERVED, api_keys=keys) as (client, _):
        alice = get_client(url=str(client.base_url), api_key="ka")
        bob = get_client(url=str(client.base_url), api_key="kb")
        first, second = await _busy_thread(alice), await _busy_thread(alice)
        bobs = await _busy_thread(bob)

        await alice.runs.cancel_many(status="pending")  # not Bob's
        gate.set()
        ends = [await alice.runs.join(t, held) for t, held, _ in (first, second)]
        await bob.runs.join(bobs[0], bobs[2])  # Bob's queued run started after his held one
        alices = [await _status(alice, t, run) for t, *ids in (first, second) for run in ids]
        bobs_runs = [await _status(bob, bobs[0], run) for run in bobs[1:]]
        await alice.aclose()
        await bob.aclose()

    # Alice's held runs went on (to their raw interrupt); her waiting ones never started.
    assert [end["__interrupt__"][0]["value"] for end in ends] == [{"question": "Go on?"}] * 2
    assert alices == [
        ("interrupted", "interrupted"),
        ("interrupted", "cancelled"),
        ("interrupted", "interrupted"),
        ("interrupted", "cancelled"),
    ]
    # Bob's: both ran (the second found the first's interrupt waiting: refused, as a message).
    assert bobs_runs[0] == ("interrupted", "interrupted")
    assert bobs_runs[1][0] == "error"


async def test_cancel_many_by_id_cancels_only_those_and_refuses_what_it_cannot_name(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, held, queued = await _busy_thread(sdk)
        answer = await client.post(
            "/runs/cancel", json={"thread_id": thread_id, "run_ids": [queued], "status": "all"}
        )
        refused = {
            "no thread, no status": await client.post("/runs/cancel", json={}),
            "ids without a thread": await client.post("/runs/cancel", json={"run_ids": [held]}),
            "no such thread": await client.post(
                "/runs/cancel", json={"thread_id": "00000000-0000-4000-8000-000000000000"}
            ),
        }
        still = await _status(sdk, thread_id, held)

    assert answer.json()["cancelled"] == [{"thread_id": thread_id, "run_id": queued}]
    assert still == ("running", None)
    assert {name: (r.status_code, r.json()["error"]["code"]) for name, r in refused.items()} == {
        "no thread, no status": (422, "request_invalid"),
        "ids without a thread": (422, "request_invalid"),
        "no such thread": (404, "thread_not_found"),
    }


async def _thread_count(client: httpx.AsyncClient) -> int:
    count: int = (await client.post("/threads/count", json={})).json()
    return count


async def test_create_batch_starts_each_run_on_a_new_thread_once(open_live: Any) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        runs = await sdk.runs.create_batch(
            [
                {"assistant_id": "tutor", "input": QUESTION},
                {"assistant_id": "tutor", "input": HELLO},
            ]
        )
        ends = [await sdk.runs.join(run["thread_id"], run["run_id"]) for run in runs]
        before = await _thread_count(client)
        good = {"assistant_id": "tutor", "input": HELLO}
        refused_first = {  # each checked before any run starts
            name: await client.post("/runs/batch", json=[good, bad])
            for name, bad in {
                "unknown assistant": {"assistant_id": "nobody", "input": HELLO},
                "a command": {"assistant_id": "tutor", "command": {"resume": "yes"}},
                "no input": {"assistant_id": "tutor"},
                "a client to watch": {**good, "on_disconnect": "cancel"},
                "a checkpoint": {**good, "checkpoint_id": "1f0-none"},
            }.items()
        }
        after_refusals = await _thread_count(client)
        unknown_note = {"assistant_id": "tutor", "input": {**HELLO, "note_id": "no-such-note"}}
        late = await client.post("/runs/batch", json=[good, unknown_note])
        batch = [good, good]
        keyed = {"Idempotency-Key": "batch-1"}
        first = await client.post("/runs/batch", json=batch, headers=keyed)
        again = await client.post("/runs/batch", json=batch, headers=keyed)
        other = await client.post("/runs/batch", json=[*batch, good], headers=keyed)

    assert len({run["thread_id"] for run in runs}) == 2
    assert [end["messages"][0]["content"] for end in ends] == ["What is retrieval?", "Hello"]
    assert {
        name: (r.status_code, r.json()["error"]["code"]) for name, r in refused_first.items()
    } == {
        "unknown assistant": (404, "assistant_not_found"),
        "a command": (409, "no_pending_consent"),
        "no input": (409, "nothing_to_continue"),
        "a client to watch": (422, "unsupported_field"),
        "a checkpoint": (404, "checkpoint_not_found"),
    }
    assert after_refusals == before
    # Told only by its start: the runs before it started, and are named.
    assert (late.status_code, late.json()["error"]["code"]) == (404, "note_not_found")
    (started,) = late.json()["error"]["details"]["started"]
    assert set(started) == {"thread_id", "run_id"}
    assert first.status_code == again.status_code == 200
    assert [r["run_id"] for r in again.json()] == [r["run_id"] for r in first.json()]
    assert len({r["run_id"] for r in first.json()}) == 2
    assert (other.status_code, other.json()["error"]["code"]) == (422, "idempotency_key_reused")
