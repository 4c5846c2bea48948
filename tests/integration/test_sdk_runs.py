"""The LangGraph SDK's runs against Consentry, with the real ``langgraph-sdk`` client over real
HTTP: a run streams as the SDK reads it (``metadata`` first, ``messages`` tuples, ``values`` with
``__interrupt__`` when the graph waits, ``end``), ``command.resume`` is a decision through
Consentry's consent records (raw interrupts, the consent kit, LangChain's tool-call reviews),
a second resume loses with 409, a join reads a run again, a cancel stops it."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import NAMESPACE_URL, uuid5

import pytest
from langgraph_sdk.errors import ConflictError, UnprocessableEntityError

from tests.langgraph_client import parts, sdk_client
from tests.openai_stub import OpenAIStub

SERVED = (
    "city=consentry_graphs.examples.ask_city:graph,"
    "agent=consentry_graphs.examples.tool_review_agent:graph"
)


def _last_values(parts: list[Any]) -> dict[str, Any]:
    values = [p.data for p in parts if p.event == "values"]
    assert values, [p.event for p in parts]
    result: dict[str, Any] = values[-1]
    return result


async def test_a_raw_interrupt_is_streamed_as_the_sdk_reads_it_and_resumed_by_command(
    open_live: Any,
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        asked = await parts(
            sdk.runs.stream(
                None,
                "city",
                input={"messages": [{"role": "user", "content": "Plan a trip"}]},
                stream_mode=["values", "messages-tuple"],
            )
        )

        # The state after each step (its input, then at the interrupt), then the interrupt in a
        # frame of its own, as LangGraph streams it.
        assert [p.event for p in asked] == ["metadata", "values", "values", "values", "end"]
        metadata = asked[0].data
        thread_id, run_id = metadata["thread_id"], metadata["run_id"]
        state, waiting = asked[2].data, asked[3].data
        (interrupt,) = waiting["__interrupt__"]
        assert list(waiting) == ["__interrupt__"]
        assert interrupt["value"] == {"question": "Which city?"}
        assert [m["type"] for m in state["messages"]] == ["human"]
        assert "__interrupt__" not in state
        assert asked[-1].data == {"run_id": run_id, "status": "interrupted"}
        assert all(p.id for p in asked)  # every frame can be rejoined from

        answered = await parts(sdk.runs.stream(thread_id, "city", command={"resume": "Lisbon"}))
        final = _last_values(answered)
        assert final["city"] == "Lisbon"
        assert final["messages"][-1]["content"] == "Booked a trip to Lisbon."
        assert "__interrupt__" not in final
        assert answered[-1].data["status"] == "success"

        approval = (await client.get(f"/v1/approvals/{interrupt['id']}")).json()
        assert (approval["status"], approval["decided"]["value"]) == ("answered", "Lisbon")

        with pytest.raises(ConflictError) as lost:
            await parts(sdk.runs.stream(thread_id, "city", command={"resume": "Faro"}))
        assert lost.value.response.status_code == 409


async def test_the_tutors_consent_takes_the_kits_decision_through_command(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        question = {"role": "user", "content": "What is retrieval?"}
        answered = await parts(
            sdk.runs.stream(
                None,
                "tutor",
                input={"messages": [question]},
                stream_mode=["messages-tuple", "values"],
            )
        )
        thread_id = answered[0].data["thread_id"]
        said = [p.data for p in answered if p.event == "messages"]
        assert said, [p.event for p in answered]
        message, metadata = said[-1]
        assert message["type"] in ("AIMessageChunk", "ai")
        assert metadata["thread_id"] == thread_id
        reply = "".join(m["content"] for m, _ in said)
        assert _last_values(answered)["messages"][-1]["content"] == reply

        ask = {"role": "user", "content": "Add a summary of our discussion to my note"}
        asked = await parts(sdk.runs.stream(thread_id, "tutor", input={"messages": [ask]}))
        assert asked[-1].data["status"] == "interrupted"

        with pytest.raises(UnprocessableEntityError):
            await parts(sdk.runs.stream(thread_id, "tutor", command={"resume": "yes"}))
        approved = await parts(
            sdk.runs.stream(thread_id, "tutor", command={"resume": {"decision": "approve"}})
        )
        approvals = (await client.get("/v1/approvals")).json()["approvals"]

    assert approved[-1].data["status"] == "success"
    assert [(a["kind"], a["status"]) for a in approvals] == [("note_create", "approved")]


async def test_a_tool_call_review_is_resumed_with_the_middlewares_decisions(
    open_live: Any,
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        asked = await parts(
            sdk.runs.stream(
                None,
                "agent",
                input={"messages": [{"role": "user", "content": "Plan a trip to Rome"}]},
            )
        )
        thread_id = asked[0].data["thread_id"]
        (interrupt,) = _last_values(asked)["__interrupt__"]
        assert [a["name"] for a in interrupt["value"]["action_requests"]] == [
            "get_weather",
            "send_email",
        ]

        decisions = [{"type": "respond", "message": "Rainy."}, {"type": "approve"}]
        done = await parts(
            sdk.runs.stream(thread_id, "agent", command={"resume": {"decisions": decisions}})
        )

    messages = _last_values(done)["messages"]
    assert messages[-1]["content"] == ("Done. Rainy. Email to team@example.com sent: Trip to Rome.")


async def test_a_run_is_joined_from_its_start_and_after_a_last_event_id(
    open_live: Any,
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        asked = await parts(
            sdk.runs.stream(None, "city", input={"messages": [{"role": "user", "content": "Plan"}]})
        )
        thread_id, run_id = asked[0].data["thread_id"], asked[0].data["run_id"]

        again = await parts(sdk.runs.join_stream(thread_id, run_id))
        after = await parts(sdk.runs.join_stream(thread_id, run_id, last_event_id=asked[0].id))

    assert [p.event for p in again] == ["metadata", "values", "values", "end"]
    assert [p.event for p in after] == ["values", "values", "end"]  # nothing before the id
    assert after == again[1:]


async def test_an_assistant_is_named_by_its_graph_or_by_its_uuid(open_live: Any) -> None:
    body = {"messages": [{"role": "user", "content": "Plan"}]}
    assistant = str(uuid5(NAMESPACE_URL, "city"))
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        asked = await parts(sdk.runs.stream(None, assistant, input=body))
        thread = (await client.get(f"/v1/threads/{asked[0].data['thread_id']}")).json()

    assert thread["graph"] == "city"
    assert asked[-1].data["status"] == "interrupted"


async def test_what_the_face_does_not_serve_is_refused_by_name(open_live: Any) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        body = {"messages": [{"role": "user", "content": "Plan"}]}
        with pytest.raises(UnprocessableEntityError) as refused:
            await parts(sdk.runs.stream(None, "city", input=body, config={"tags": ["x"]}))
        assert refused.value.response.json()["error"]["code"] == "unsupported_field"


async def test_a_run_cancelled_through_the_sdk_ends_cancelled_and_a_restart_keeps_an_interrupt(
    open_live: Any, stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("An answer nobody waits for.")
    async with open_live(**stub.app_settings()) as (client, _), sdk_client(client) as sdk:
        first: list[Any] = []
        started = asyncio.Event()

        async def follow() -> None:
            async for part in sdk.runs.stream(
                None, "tutor", input={"messages": [{"role": "user", "content": "What is x?"}]}
            ):
                first.append(part)
                started.set()

        running = asyncio.create_task(follow())
        await asyncio.wait_for(stub.holding.wait(), 10)
        await asyncio.wait_for(started.wait(), 10)  # the metadata frame names the run
        metadata = first[0].data
        await sdk.runs.cancel(metadata["thread_id"], metadata["run_id"])
        stub.release()
        await asyncio.wait_for(running, 10)

    assert first[-1].data == {"run_id": metadata["run_id"], "status": "cancelled"}


async def test_an_interrupt_waits_across_a_restart_and_the_sdk_resumes_it(
    open_live: Any,
) -> None:
    body = {"messages": [{"role": "user", "content": "Plan"}]}
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        asked = await parts(sdk.runs.stream(None, "city", input=body))
    thread_id = asked[0].data["thread_id"]

    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        done = await parts(sdk.runs.stream(thread_id, "city", command={"resume": "Oslo"}))

    assert _last_values(done)["messages"][-1]["content"] == "Booked a trip to Oslo."
