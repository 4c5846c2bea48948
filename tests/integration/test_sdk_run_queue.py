"""The LangGraph SDK's ``multitask_strategy="enqueue"`` against Consentry, with the real
``langgraph-sdk`` client over real HTTP: a run asked of a busy thread waits (``pending``) and
starts after the active run, in the order asked; a ``command`` is read against the consents
pending when its turn comes; a start the thread refuses is the run's ``error`` with its code; a
waiting run can be cancelled; an ``Idempotency-Key`` names one queued run; a run still waiting
when its server stopped starts under the next one; ``on_disconnect="cancel"`` on a wait."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, UnprocessableEntityError

from consentry.principal import Principal
from consentry.runtime.runs import RunQueue
from consentry.storage import run_queue as queue_repo
from consentry.storage import runs as runs_repo
from tests.integration import gate_graph
from tests.integration.gate_graph import SERVED
from tests.langgraph_client import parts, sdk_client

HELLO = {"messages": [{"role": "user", "content": "Hello"}]}
AGAIN = {"messages": [{"role": "user", "content": "Again"}]}


async def _held_run(sdk: LangGraphClient) -> tuple[str, str]:
    """A thread whose run waits at the gate: (thread id, run id)."""
    created = await sdk.runs.create(None, "gate", input=HELLO)
    return created["thread_id"], created["run_id"]


def _ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


async def _statuses(sdk: LangGraphClient, thread_id: str) -> list[tuple[str, str]]:
    return [(run["run_id"], run["status"]) for run in await sdk.runs.list(thread_id)]


async def test_a_queued_run_waits_its_turn_and_a_command_is_read_against_the_consents_then(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, held = await _held_run(sdk)
        queued = await sdk.runs.create(thread_id, "gate", input=AGAIN, multitask_strategy="enqueue")
        resumed = await sdk.runs.create(
            thread_id, "gate", command={"resume": "yes"}, multitask_strategy="enqueue"
        )
        # A join of a waiting run streams it once it starts (here: its refusal).
        streamed = asyncio.create_task(parts(sdk.runs.join_stream(thread_id, queued["run_id"])))
        waiting = await _statuses(sdk, thread_id)
        with pytest.raises(ConflictError) as rejected:
            await sdk.runs.create(thread_id, "gate", input=AGAIN, multitask_strategy="reject")

        gate.set()
        refused = await asyncio.wait_for(streamed, 10)
        done = await sdk.runs.join(thread_id, resumed["run_id"])
        runs = {run["run_id"]: run for run in await sdk.runs.list(thread_id)}
        approvals = (await client.get("/v1/approvals", params={"status": "answered"})).json()

    assert (resumed["status"], resumed["multitask_strategy"]) == ("pending", "enqueue")
    queued_id = queued["run_id"]
    assert waiting == [(resumed["run_id"], "pending"), (queued_id, "pending"), (held, "running")]
    assert rejected.value.response.json()["error"]["code"] == "run_in_progress"

    # In the order asked: the input first, refused (a message cannot pass a raw interrupt), then
    # the command, which answered the interrupt the held run asked after both were queued.
    assert refused[0].data == {"run_id": queued_id, "thread_id": thread_id}
    assert [p.event for p in refused][:2] == ["metadata", "error"]
    assert refused[1].data["error"] == "consent_pending"
    assert refused[-1].data == {"run_id": queued_id, "status": "error"}
    assert (runs[queued_id]["status"], runs[queued_id]["error_code"]) == (
        "error",
        "consent_pending",
    )
    assert (runs[held]["status"], runs[resumed["run_id"]]["status"]) == ("interrupted", "success")
    assert done["messages"][-1]["content"] == "Done: yes"
    (answered,) = [a for a in approvals["approvals"] if a["thread_id"] == thread_id]
    assert (answered["run_id"], answered["decided"]["value"]) == (held, "yes")


async def test_a_queued_run_read_just_as_it_starts_is_found(
    open_live: Any, gate: asyncio.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a read of a queued run found neither its queue row waiting nor its run row
    when the run started between the two statements (404 ``run_not_found`` on PostgreSQL)."""
    async with open_live(graphs=SERVED) as (client, services), sdk_client(client) as sdk:
        thread_id, _held = await _held_run(sdk)
        resumed = await sdk.runs.create(
            thread_id, "gate", command={"resume": "yes"}, multitask_strategy="enqueue"
        )
        run_id = resumed["run_id"]
        interleaved: list[str] = []

        async def started() -> bool:
            async with services.db.read() as conn:
                return await runs_repo.run_status(conn, run_id) is not None

        def starting_after(name: str, read: Any) -> Any:
            async def first_read_then_the_start(conn: Any, thread: str, run: str) -> Any:
                found = await read(conn, thread, run)
                if run == run_id and not interleaved:
                    interleaved.append(name)  # the run starts between this read and the next
                    gate.set()
                    for _ in range(500):  # its start, committed by the queue's drain
                        if await started():
                            break
                        await asyncio.sleep(0.02)
                    else:
                        raise AssertionError("the queued run did not start")
                return found

            return first_read_then_the_start

        monkeypatch.setattr(runs_repo, "thread_run", starting_after("run", runs_repo.thread_run))
        monkeypatch.setattr(
            queue_repo, "queued_run", starting_after("queue", queue_repo.queued_run)
        )
        found = await sdk.runs.get(thread_id, run_id)
        monkeypatch.undo()
        done = await sdk.runs.join(thread_id, run_id)

    assert interleaved  # the start did come between the reads
    assert found["run_id"] == run_id
    assert done["messages"][-1]["content"] == "Done: yes"


async def test_a_waiting_run_is_cancelled_and_never_starts(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, held = await _held_run(sdk)
        queued = await sdk.runs.create(thread_id, "gate", input=AGAIN, multitask_strategy="enqueue")
        await sdk.runs.cancel(thread_id, queued["run_id"])
        with pytest.raises(ConflictError) as again:
            await sdk.runs.cancel(thread_id, queued["run_id"])
        gate.set()
        await sdk.runs.join(thread_id, held)
        cancelled = await sdk.runs.get(thread_id, queued["run_id"])
        runs = await _statuses(sdk, thread_id)
        thread = await sdk.threads.get(thread_id)

    assert (cancelled["status"], cancelled["reason"]) == ("interrupted", "cancelled")
    assert again.value.response.json()["error"]["code"] == "no_active_run"
    assert runs == [(queued["run_id"], "interrupted"), (held, "interrupted")]
    assert thread["status"] == "interrupted"  # the held run's question waits, nothing ran after


async def test_an_idempotency_key_names_one_queued_run(open_live: Any, gate: asyncio.Event) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, held = await _held_run(sdk)
        key = {"Idempotency-Key": "queued-once"}
        first = await sdk.runs.create(
            thread_id, "gate", input=AGAIN, multitask_strategy="enqueue", headers=key
        )
        repeated = await sdk.runs.create(
            thread_id, "gate", input=AGAIN, multitask_strategy="enqueue", headers=key
        )
        other = {"messages": [{"role": "user", "content": "Something else"}]}
        with pytest.raises(UnprocessableEntityError) as reused:
            await sdk.runs.create(
                thread_id, "gate", input=other, multitask_strategy="enqueue", headers=key
            )
        runs = await _statuses(sdk, thread_id)

    assert repeated["run_id"] == first["run_id"]
    assert runs == [(first["run_id"], "pending"), (held, "running")]
    assert reused.value.response.json()["error"]["code"] == "idempotency_key_reused"


async def test_a_run_still_waiting_when_its_server_stopped_starts_under_the_next(
    open_live: Any, gate: asyncio.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("consentry.runtime.runs.execute._executor.SHUTDOWN_GRACE_SECONDS", 0.2)
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, _ = await _held_run(sdk)
        queued = await sdk.runs.create(
            thread_id, "gate", command={"resume": "after a restart"}, multitask_strategy="enqueue"
        )
    # The server stopped with its run held mid-step and the resume still queued.
    gate.set()
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        done = await sdk.runs.join(thread_id, queued["run_id"])
        resumed = await sdk.runs.get(thread_id, queued["run_id"])

    assert done["messages"][-1]["content"] == "Done: after a restart"
    assert (resumed["status"], resumed["reason"]) == ("success", "completed")


async def test_a_wait_that_asked_to_cancel_on_disconnect_cancels_its_run_when_its_client_goes(
    open_live: Any, gate: asyncio.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_live(graphs=SERVED) as (client, services), sdk_client(client) as sdk:
        cancels = asyncio.Queue[str]()
        cancel = services.runs.cancel

        async def told(*args: Any, **kwargs: Any) -> Any:
            cancels.put_nowait(kwargs["run_id"])
            return await cancel(*args, **kwargs)

        monkeypatch.setattr(services.runs, "cancel", told)
        added = asyncio.Queue[str]()
        add = RunQueue.add

        async def queued_now(queue: RunQueue, *args: Any, **kwargs: Any) -> Any:
            done = await add(queue, *args, **kwargs)
            added.put_nowait(done.run_id)
            return done

        monkeypatch.setattr(RunQueue, "add", queued_now)
        thread = await sdk.threads.create(graph_id="gate")
        thread_id = thread["thread_id"]
        waited = asyncio.create_task(
            sdk.runs.wait(thread_id, "gate", input=HELLO, on_disconnect="cancel")
        )
        await asyncio.wait_for(gate_graph.REACHED.wait(), 10)
        queued = asyncio.create_task(
            sdk.runs.wait(
                thread_id,
                "gate",
                input=AGAIN,
                multitask_strategy="enqueue",
                on_disconnect="cancel",
            )
        )
        await asyncio.wait_for(added.get(), 10)
        queued.cancel()  # the queued run's client goes: the run is taken out of the queue
        queued_run, held_run = await sdk.runs.list(thread_id)
        await sdk.runs.join(thread_id, queued_run["run_id"])  # waits for it to leave the queue
        left = await sdk.runs.get(thread_id, queued_run["run_id"])
        waited.cancel()  # the held run's client goes: it stops at its next step
        cancelled = await asyncio.wait_for(cancels.get(), 10)
        gate.set()
        await sdk.runs.join(thread_id, held_run["run_id"])
        ended = [(r["status"], r["reason"]) for r in await sdk.runs.list(thread_id)]
        raw = await client.post(
            f"/threads/{thread_id}/runs",
            json={"assistant_id": "gate", "input": HELLO, "on_disconnect": "cancel"},
        )

    assert (left["status"], left["reason"]) == ("interrupted", "cancelled")
    assert cancelled == held_run["run_id"]  # (the queued one never reached the run service)
    assert ended == [("interrupted", "cancelled"), ("interrupted", "cancelled")]
    assert (raw.status_code, raw.json()["error"]["code"]) == (422, "unsupported_field")


async def test_an_interrupting_run_cuts_the_active_one_short_and_starts_after_it(
    open_live: Any, gate: asyncio.Event
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread_id, held = await _held_run(sdk)
        await asyncio.wait_for(gate_graph.REACHED.wait(), 10)
        gate_graph.REACHED.clear()
        cutting = await sdk.runs.create(
            thread_id, "gate", input=AGAIN, multitask_strategy="interrupt"
        )
        # The held run never passed its gate: the new one waits at it in its turn.
        await asyncio.wait_for(gate_graph.REACHED.wait(), 10)
        cut = await sdk.runs.get(thread_id, held)
        gate.set()
        done = await sdk.runs.join(thread_id, cutting["run_id"])
        runs = {run["run_id"]: run for run in await sdk.runs.list(thread_id)}

    assert (cut["status"], cut["reason"]) == ("interrupted", "cancelled")
    assert runs[cutting["run_id"]]["status"] == "interrupted"  # it asked "Go on?"
    assert runs[cutting["run_id"]]["reason"] == "interrupted"
    assert done["__interrupt__"][0]["value"] == {"question": "Go on?"}  # type: ignore[index]


async def test_the_default_starts_a_run_at_once_on_an_idle_thread_and_queues_one_on_a_busy_one(
    open_live: Any, stub: Any
) -> None:
    """``enqueue`` is the default, as on the Agent Server: on an idle thread with nothing
    waiting the run starts at once (no row in the queue); on a busy one it waits its turn, in
    the order asked."""
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("First answer.")
    for answer in ("Second answer.", "Third answer."):
        stub.reply('{"intent": "answer", "query": "x"}')
        stub.reply(answer)
    async with open_live(**stub.app_settings()) as (client, _), sdk_client(client) as sdk:
        thread = await sdk.threads.create()
        thread_id = thread["thread_id"]
        first = await sdk.runs.create(thread_id, "tutor", input=_ask("First?"))
        await asyncio.wait_for(stub.holding.wait(), 10)
        second = await sdk.runs.create(thread_id, "tutor", input=_ask("Second?"))
        third = await sdk.runs.create(thread_id, "tutor", input=_ask("Third?"))
        waiting = await _statuses(sdk, thread_id)
        stub.release()
        await sdk.runs.join(thread_id, third["run_id"])
        state = await sdk.threads.get_state(thread_id)
        ended = await _statuses(sdk, thread_id)

    assert first["status"] == "running"  # at once
    assert (second["status"], third["status"]) == ("pending", "pending")
    assert waiting == [
        (third["run_id"], "pending"),
        (second["run_id"], "pending"),
        (first["run_id"], "running"),
    ]
    assert [status for _, status in ended] == ["success"] * 3
    said = [(m["type"], m["content"]) for m in state["values"]["messages"]]
    assert said == [
        ("human", "First?"),
        ("ai", "First answer."),
        ("human", "Second?"),
        ("ai", "Second answer."),
        ("human", "Third?"),
        ("ai", "Third answer."),
    ]


async def test_a_run_that_would_start_at_once_goes_after_a_run_queued_meanwhile(
    open_live: Any, gate: asyncio.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The idle thread's fast path keeps the queue's order: a run found waiting in the queue at
    the claim (queued between the request's look and its claim) goes first; this one is then
    queued behind it."""
    async with open_live(graphs=SERVED) as (client, services), sdk_client(client) as sdk:
        thread_id = (await sdk.threads.create())["thread_id"]
        started = RunQueue.start_now
        queued_meanwhile: list[str] = []

        async def after_a_queued_run(
            queue: RunQueue, owner: Principal, *args: Any, **kwargs: Any
        ) -> bool:
            # Another request's run is queued on the thread after this request looked (as a
            # row: nothing drains it before this request's claim).
            theirs = str(uuid4())
            async with services.db.write() as conn:
                await queue_repo.add_queued_run(
                    conn,
                    owner,
                    run_id=theirs,
                    thread_id=thread_id,
                    request={"assistant_id": "gate", "input": HELLO},
                    metadata=None,
                    now=services.clock(),
                )
            queued_meanwhile.append(theirs)
            return await started(queue, owner, *args, **kwargs)

        monkeypatch.setattr(RunQueue, "start_now", after_a_queued_run)
        mine = await sdk.runs.create(thread_id, "gate", input=AGAIN)
        await asyncio.wait_for(gate_graph.REACHED.wait(), 10)
        statuses = dict(await _statuses(sdk, thread_id))

    (theirs,) = queued_meanwhile
    assert statuses == {theirs: "running", mine["run_id"]: "pending"}
