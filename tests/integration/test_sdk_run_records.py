"""The LangGraph SDK's background runs and run records against Consentry, with the real
``langgraph-sdk`` client over real HTTP: ``runs.create`` starts a run that goes on without a
stream, ``runs.wait`` answers with the state a run leaves (``__interrupt__`` while a consent
waits, ``__error__`` when it failed), ``runs.join`` waits for one, ``runs.get`` / ``runs.list``
read them back with their status and the client's metadata; ``if_not_exists="create"``; racing
resumes through the SDK have one winner; a cut stream is rejoined from its last id."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import NAMESPACE_URL, uuid4, uuid5

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError

from tests.langgraph_client import parts, sdk_client
from tests.openai_stub import OpenAIStub

SERVED = "city=consentry_graphs.examples.ask_city:graph"
CITY = str(uuid5(NAMESPACE_URL, "city"))
PLAN = {"messages": [{"role": "user", "content": "Plan a trip"}]}


async def _ended(sdk: LangGraphClient, thread_id: str, run_id: str) -> dict[str, Any]:
    """The run once it has ended (``runs.join`` waits for it)."""
    await sdk.runs.join(thread_id, run_id)
    run: dict[str, Any] = dict(await sdk.runs.get(thread_id, run_id))
    return run


async def test_a_created_run_goes_on_without_a_stream_and_is_read_back_with_its_metadata(
    open_live: Any,
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        created = await sdk.runs.create(None, "city", input=PLAN, metadata={"origin": "cli"})
        thread_id, run_id = created["thread_id"], created["run_id"]
        assert created["status"] in ("running", "interrupted")  # it may have reached the consent
        assert (created["assistant_id"], created["metadata"]) == (CITY, {"origin": "cli"})

        waited = await sdk.runs.join(thread_id, run_id)
        (interrupt,) = waited["__interrupt__"]
        assert interrupt["value"] == {"question": "Which city?"}
        run = await sdk.runs.get(thread_id, run_id)
        assert (run["status"], run["reason"], run["metadata"]) == (
            "interrupted",
            "interrupted",
            {"origin": "cli"},
        )

        answered = await sdk.runs.create(thread_id, "city", command={"resume": "Lisbon"})
        finished = await _ended(sdk, thread_id, answered["run_id"])
        runs = await sdk.runs.list(thread_id)
        thread = (await client.get(f"/v1/threads/{thread_id}")).json()

    assert (finished["status"], finished["reason"], finished["metadata"]) == (
        "success",
        "completed",
        {},
    )
    assert [r["run_id"] for r in runs] == [answered["run_id"], run_id]  # newest first
    assert thread["title"] == "Plan a trip"
    assert thread["status"] == "idle"


async def test_wait_answers_with_the_state_a_run_leaves_interrupt_then_final_values(
    open_live: Any,
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        thread = await sdk.threads.create(graph_id="city")
        asked = await sdk.runs.wait(thread["thread_id"], "city", input=PLAN)
        (interrupt,) = asked["__interrupt__"]
        approval = (await client.get(f"/v1/approvals/{interrupt['id']}")).json()

        done = await sdk.runs.wait(thread["thread_id"], "city", command={"resume": "Oslo"})
        runs = await sdk.runs.list(thread["thread_id"], status="success")
        titled = (await client.get(f"/v1/threads/{thread['thread_id']}")).json()

    assert approval["status"] == "pending"
    assert [m["type"] for m in asked["messages"]] == ["human"]
    assert done["city"] == "Oslo"
    assert done["messages"][-1]["content"] == "Booked a trip to Oslo."
    assert "__interrupt__" not in done
    assert [r["status"] for r in runs] == ["success"]
    assert titled["title"] == "Plan a trip"  # a thread made by POST /threads: its first message


async def test_wait_on_a_failed_run_answers_with_its_error_code(
    open_live: Any, stub: OpenAIStub
) -> None:
    stub.fail(401)
    stub.fail(401)
    async with open_live(**stub.app_settings()) as (client, _), sdk_client(client) as sdk:
        question = {"messages": [{"role": "user", "content": "What is x?"}]}
        failed = await sdk.runs.wait(None, "tutor", input=question, raise_error=False)
        with pytest.raises(Exception, match="model_auth_failed"):  # the SDK raises on `__error__`
            await sdk.runs.wait(None, "tutor", input=question)

    assert failed["__error__"]["error"] == "model_auth_failed"
    assert failed["__error__"]["message"]


async def test_a_run_on_a_thread_that_does_not_exist_creates_it_only_when_asked(
    open_live: Any,
) -> None:
    thread_id = str(uuid4())
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        with pytest.raises(httpx.HTTPStatusError) as unknown:  # `wait` raises httpx's errors
            await sdk.runs.wait(thread_id, "city", input=PLAN)
        asked = await sdk.runs.wait(thread_id, "city", input=PLAN, if_not_exists="create")
        thread = await sdk.threads.get(thread_id)
        with pytest.raises(httpx.HTTPStatusError) as not_a_uuid:
            await sdk.runs.wait("my-thread", "city", input=PLAN, if_not_exists="create")

    assert unknown.value.response.json()["error"]["code"] == "thread_not_found"
    assert asked["__interrupt__"][0]["value"] == {"question": "Which city?"}
    assert (thread["status"], thread["metadata"]["graph_id"]) == ("interrupted", "city")
    assert not_a_uuid.value.response.json()["error"]["code"] == "invalid_thread_id"


async def test_runs_are_read_only_by_their_threads_owner_and_by_their_thread(
    open_live: Any,
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        first = await sdk.runs.create(None, "city", input=PLAN)
        other = await sdk.threads.create(graph_id="city")
        with pytest.raises(NotFoundError) as unknown:
            await sdk.runs.get(first["thread_id"], str(uuid4()))
        with pytest.raises(NotFoundError):
            await sdk.runs.get(other["thread_id"], first["run_id"])  # not that thread's run
        with pytest.raises(httpx.HTTPStatusError) as joined_elsewhere:
            await sdk.runs.join(other["thread_id"], first["run_id"])
        listed_elsewhere = await sdk.runs.list(other["thread_id"])
        with pytest.raises(NotFoundError) as deleted_elsewhere:
            await sdk.runs.delete(other["thread_id"], first["run_id"])
        await sdk.runs.join(first["thread_id"], first["run_id"])
        none_pending = await sdk.runs.list(first["thread_id"], status="pending")

    assert unknown.value.response.json()["error"]["code"] == "run_not_found"
    assert joined_elsewhere.value.response.status_code == 404
    assert listed_elsewhere == []
    assert deleted_elsewhere.value.response.json()["error"]["code"] == "run_not_found"
    assert none_pending == []


async def test_racing_resumes_through_the_sdk_have_one_winner(open_live: Any) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        asked = await sdk.runs.wait(None, "city", input=PLAN)
        thread_id = (await sdk.threads.search(status="interrupted"))[0]["thread_id"]
        approval_id = asked["__interrupt__"][0]["id"]

        async def resume(city: str) -> dict[str, Any] | httpx.HTTPStatusError:
            try:
                result: dict[str, Any] = await sdk.runs.wait(
                    thread_id, "city", command={"resume": city}
                )
                return result
            except httpx.HTTPStatusError as lost:
                return lost

        results = await asyncio.gather(*(resume(city) for city in ("Lisbon", "Faro", "Porto")))
        approval = (await client.get(f"/v1/approvals/{approval_id}")).json()
        audit = (await client.get(f"/v1/threads/{thread_id}/audit")).json()["records"]

    (won,) = [r for r in results if isinstance(r, dict)]
    lost = [r for r in results if isinstance(r, httpx.HTTPStatusError)]
    assert len(lost) == 2
    for refusal in lost:
        assert refusal.response.status_code == 409
        # Refused while the winner's run goes on, or after it ended (nothing left to resume).
        assert refusal.response.json()["error"]["code"] in (
            "already_decided",
            "run_in_progress",
            "no_pending_consent",
        )
    assert won["city"] == approval["decided"]["value"]
    assert [r["action"] for r in audit].count("consent_decided") == 1


async def test_a_stream_cut_mid_run_is_rejoined_from_its_last_id_without_a_gap(
    open_live: Any, stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("Retrieval finds the passages an answer needs.")
    async with open_live(**stub.app_settings()) as (client, services), sdk_client(client) as sdk:
        seen: list[Any] = []
        question = {"messages": [{"role": "user", "content": "What is retrieval?"}]}
        async for part in sdk.runs.stream(
            None, "tutor", input=question, stream_mode=["messages-tuple", "values"]
        ):
            seen.append(part)
            if part.event == "metadata":
                break  # the connection drops once the run is known
        metadata = seen[0].data
        await asyncio.wait_for(stub.holding.wait(), 10)
        stream = services.executor.active_stream(metadata["thread_id"])

        async def rejoined() -> list[Any]:
            return [
                part
                async for part in sdk.runs.join_stream(
                    metadata["thread_id"], metadata["run_id"], last_event_id=seen[-1].id
                )
            ]

        # Tokens are never stored: the answer is released once the cut stream has left and
        # the rejoined one follows the run, so every token of it is streamed to the rejoiner.
        async with asyncio.timeout(10):
            while stream.listeners:  # noqa: ASYNC110 - no event exists for this
                await asyncio.sleep(0.01)
            joining = asyncio.create_task(rejoined())
            while not stream.listeners:  # noqa: ASYNC110 - no event exists for this
                await asyncio.sleep(0.01)
        stub.release()
        rest = await joining

    said = "".join(m["content"] for m, _ in (p.data for p in rest if p.event == "messages"))
    assert "metadata" not in [p.event for p in rest]  # nothing before the cut comes again
    assert said == "Retrieval finds the passages an answer needs."
    assert rest[-2].event == "values"
    assert rest[-2].data["messages"][-1]["content"] == said
    assert rest[-1].data == {"run_id": metadata["run_id"], "status": "success"}


async def test_on_disconnect_cancel_stops_a_run_whose_client_left_and_only_that_run(
    open_live: Any, stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("An answer nobody waits for.")
    stub.reply('{"intent": "answer", "query": "y"}')
    stub.reply("An answer read to its end.")
    question = {"messages": [{"role": "user", "content": "What is x?"}]}
    async with open_live(**stub.app_settings()) as (client, services), sdk_client(client) as sdk:
        cancels = asyncio.Queue[str]()
        cancel = services.runs.cancel

        async def told(*args: Any, **kwargs: Any) -> Any:
            cancels.put_nowait(kwargs["run_id"])
            return await cancel(*args, **kwargs)

        monkeypatch.setattr(services.runs, "cancel", told)
        stream = sdk.runs.stream(None, "tutor", input=question, on_disconnect="cancel")
        metadata = (await anext(stream)).data
        await asyncio.wait_for(stub.holding.wait(), 10)
        await stream.aclose()  # the client leaves while the model is held
        assert await asyncio.wait_for(cancels.get(), 10) == metadata["run_id"]
        stub.release()
        left = await _ended(sdk, metadata["thread_id"], metadata["run_id"])
        read = [
            part
            async for part in sdk.runs.stream(
                metadata["thread_id"], "tutor", input=question, on_disconnect="cancel"
            )
        ]
        runs = await sdk.runs.list(metadata["thread_id"])
        with pytest.raises(httpx.HTTPStatusError) as no_longer:
            await sdk.runs.cancel(metadata["thread_id"], metadata["run_id"])

    assert (left["status"], left["reason"]) == ("interrupted", "cancelled")
    assert read[-1].data["status"] == "success"  # read to its end: not cancelled
    assert [(r["status"], r["reason"]) for r in runs] == [
        ("success", "completed"),
        ("interrupted", "cancelled"),
    ]
    assert no_longer.value.response.status_code == 409
    assert no_longer.value.response.json()["error"]["details"]["run_id"] == metadata["run_id"]


async def test_a_join_with_last_event_id_minus_one_reads_the_run_from_its_start(
    open_live: Any,
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        asked = [part async for part in sdk.runs.stream(None, "city", input=PLAN)]
        thread_id, run_id = asked[0].data["thread_id"], asked[0].data["run_id"]
        rejoined = await client.get(
            f"/threads/{thread_id}/runs/{run_id}/stream", headers={"Last-Event-ID": "-1"}
        )
        refused = await client.get(
            f"/threads/{thread_id}/runs/{run_id}/stream", headers={"Last-Event-ID": "-2"}
        )
        every_mode = ["values", "updates", "tasks", "messages-tuple", "custom"]  # a join's
        answered = await parts(
            sdk.runs.stream(thread_id, "city", command={"resume": "Oslo"}, stream_mode=every_mode)
        )
        second = answered[0].data["run_id"]
        second_again = await parts(sdk.runs.join_stream(thread_id, second, last_event_id="-1"))
        first_again = await parts(sdk.runs.join_stream(thread_id, run_id))  # not the second's

    names = [line[7:] for line in rejoined.text.splitlines() if line.startswith("event: ")]
    # Live, the state came after each step; read back from the log once the run has ended, the
    # state it left comes once (per-step output is never stored), then the interrupt.
    assert [part.event for part in asked] == ["metadata", "values", "values", "values", "end"]
    assert names == ["metadata", "values", "values", "end"]
    # What the graph gave live (its state after each step, its messages with their metadata)
    # is not stored: read back, a message comes whole from the log, with the log's metadata.
    per_step = {"values", "updates", "tasks", "messages"}
    assert [(p.event, p.data) for p in second_again if p.event not in per_step] == [
        (p.event, p.data) for p in answered if p.event not in per_step
    ]
    live = [(m["id"], m["content"]) for m, _ in (p.data for p in answered if p.event == "messages")]
    assert live == [
        (m["id"], m["content"])
        for m, meta in (p.data for p in second_again if p.event == "messages")
        if meta["langgraph_node"] == "book_trip"
    ]
    assert live
    assert all(
        meta["langgraph_step"] > 0
        for _, meta in (p.data for p in answered if p.event == "messages")
    )
    assert [p.data for p in second_again if p.event in per_step - {"messages"}] == [
        [p.data for p in answered if p.event == "values"][-1]
    ]
    assert first_again[0].data == asked[0].data  # its own metadata, then its own end
    assert first_again[-1].data == {"run_id": run_id, "status": "interrupted"}
    assert (refused.status_code, refused.json()["error"]["code"]) == (
        400,
        "invalid_last_event_id",
    )
