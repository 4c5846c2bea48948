"""The LangGraph SDK's stream modes against Consentry, with the real ``langgraph-sdk`` client over
real HTTP: ``values`` after every step (the last one the thread's state), ``updates`` naming each
node and the interrupt by its approval id, ``tasks`` as each starts and ends, in LangGraph's order
between the ``messages`` tuples; none of them stored, none reaching a ``/v1`` stream of the same
run, nothing serialized for a run nobody asked them of; a mode the Agent Server does not have is
refused by name (422). ``messages``, ``checkpoints``, ``debug``, ``events`` and a graph's own
``custom`` output: ``test_sdk_more_stream_modes``."""

from __future__ import annotations

import asyncio
from itertools import pairwise
from typing import Any

import pytest
from langgraph_sdk.errors import UnprocessableEntityError

from consentry.runtime.runs.execute import _output_recording
from tests.langgraph_client import parts, sdk_client
from tests.openai_stub import OpenAIStub
from tests.sse import parse_events, parse_frames

SERVED = "city=consentry_graphs.examples.ask_city:graph"
TRIP = "trip=consentry_graphs.examples.trip_subgraph:graph"
QUESTION = {"messages": [{"role": "user", "content": "What is retrieval?"}]}
PLAN = {"messages": [{"role": "user", "content": "Plan a trip"}]}
WAIT_SECONDS = 10


def _events(frames: list[Any]) -> list[str]:
    """The frames' event names, a run of ``messages`` tuples (one per token) as one."""
    names: list[str] = []
    for part in frames:
        if not (part.event == "messages" and names[-1:] == ["messages"]):
            names.append(part.event)
    return names


def _of(frames: list[Any], event: str) -> list[Any]:
    return [p.data for p in frames if p.event == event]


def _assert_numbered_by_stored_events(frames: list[Any]) -> None:
    """Every frame has an id, the seq of a stored event: a per-step frame the one before it, so
    the ids never go back."""
    ids = [int(p.id) for p in frames]
    assert ids == sorted(ids), ids


async def test_updates_name_each_node_as_it_ends(open_live: Any) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        streamed = await parts(
            sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode=["updates"])
        )

    assert _events(streamed) == ["metadata", "updates", "updates", "end"]
    analyzed, answered = _of(streamed, "updates")
    assert list(analyzed) == ["analyze_message"]
    assert analyzed["analyze_message"]["intent"] == "answer"
    assert list(answered) == ["answer_question"]
    (reply,) = answered["answer_question"]["messages"]
    assert reply["type"] == "ai"
    assert streamed[-1].data["status"] == "success"
    _assert_numbered_by_stored_events(streamed)


async def test_an_interrupt_is_an_update_under_its_approval_id_and_the_resume_updates_go_on(
    open_live: Any,
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        asked = await parts(sdk.runs.stream(None, "city", input=PLAN, stream_mode=["updates"]))
        thread_id = asked[0].data["thread_id"]
        approvals = (await client.get("/v1/approvals")).json()["approvals"]
        answered = await parts(
            sdk.runs.stream(
                thread_id, "city", command={"resume": "Lisbon"}, stream_mode=["updates"]
            )
        )

    assert _events(asked) == ["metadata", "updates", "end"]
    (interrupt,) = _of(asked, "updates")[0]["__interrupt__"]
    assert interrupt == {"value": {"question": "Which city?"}, "id": approvals[0]["approval_id"]}
    assert [a["approval_id"] for a in approvals] == [interrupt["id"]]
    assert asked[-1].data["status"] == "interrupted"

    assert _events(answered) == ["metadata", "updates", "updates", "end"]
    asked_city, booked = _of(answered, "updates")
    assert asked_city == {"ask_city": {"city": "Lisbon"}}
    assert booked["book_trip"]["messages"][-1]["content"] == "Booked a trip to Lisbon."


async def test_values_come_after_every_step_and_the_last_is_the_threads_state(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        streamed = await parts(sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode="values"))
        thread_id = streamed[0].data["thread_id"]
        state = await sdk.threads.get_state(thread_id)

    # The input, then the state after each of the two steps; the state the run leaves is the
    # last of those, so it does not come again.
    assert _events(streamed) == ["metadata", "values", "values", "values", "end"]
    values = _of(streamed, "values")
    for before, after in pairwise(values):
        assert before.keys() <= after.keys()
        assert after["messages"][: len(before["messages"])] == before["messages"]
    assert [len(v["messages"]) for v in values] == [1, 1, 2]
    assert values[1]["intent"] == "answer"
    assert values[-1] == state["values"]
    _assert_numbered_by_stored_events(streamed)


async def test_values_at_an_interrupt_are_the_state_then_the_interrupt_in_a_frame_of_its_own(
    open_live: Any,
) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        asked = await parts(sdk.runs.stream(None, "city", input=PLAN, stream_mode=["values"]))
        thread_id = asked[0].data["thread_id"]
        state = await sdk.threads.get_state(thread_id)
        answered = await parts(
            sdk.runs.stream(thread_id, "city", command={"resume": "Oslo"}, stream_mode=["values"])
        )
        resumed = await sdk.threads.get_state(thread_id)

    assert _events(asked) == ["metadata", "values", "values", "values", "end"]
    started, waiting, interrupt = _of(asked, "values")
    assert started == waiting == state["values"]  # ask_city wrote nothing before it asked
    assert "__interrupt__" not in waiting
    assert interrupt == {"__interrupt__": state["interrupts"]}
    # The state before the resume, after ask_city, after book_trip.
    assert _events(answered) == ["metadata", "values", "values", "values", "end"]
    before, asked_city, booked = _of(answered, "values")
    assert before == state["values"]
    assert asked_city["city"] == "Oslo"
    assert booked == resumed["values"]
    assert booked["messages"][-1]["content"] == "Booked a trip to Oslo."


async def test_values_updates_and_message_tuples_come_in_langgraphs_order(
    open_live: Any,
) -> None:
    modes = ["values", "updates", "messages-tuple"]
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        answered = await parts(sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode=modes))
        asked = await parts(sdk.runs.stream(None, "city", input=PLAN, stream_mode=modes))

    # A step's tokens as the node runs, its update when it ends, then the state.
    assert _events(answered) == [
        "metadata",
        "values",
        "updates",
        "values",
        "messages",
        "updates",
        "values",
        "end",
    ]
    reply = "".join(m["content"] for m, _ in _of(answered, "messages"))
    assert _of(answered, "updates")[-1]["answer_question"]["messages"][0]["content"] == reply
    assert _of(answered, "values")[-1]["messages"][-1]["content"] == reply
    _assert_numbered_by_stored_events(answered)
    # At an interrupt: the update that asks, the state, then the interrupt as LangGraph sends it.
    assert _events(asked) == ["metadata", "values", "updates", "values", "values", "end"]
    updates, state, interrupt = (p.data for p in asked[2:5])
    assert updates["__interrupt__"] == interrupt["__interrupt__"]
    assert "__interrupt__" not in state


async def test_tasks_come_as_each_starts_and_ends(open_live: Any) -> None:
    async with open_live(graphs=SERVED) as (client, _), sdk_client(client) as sdk:
        answered = await parts(
            sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode=["tasks"])
        )
        asked = await parts(sdk.runs.stream(None, "city", input=PLAN, stream_mode=["tasks"]))
        approvals = (await client.get("/v1/approvals")).json()["approvals"]

    assert _events(answered) == ["metadata", "tasks", "tasks", "tasks", "tasks", "end"]
    tasks = _of(answered, "tasks")
    assert [(t["name"], "input" in t, "result" in t) for t in tasks] == [
        ("analyze_message", True, False),
        ("analyze_message", False, True),
        ("answer_question", True, False),
        ("answer_question", False, True),
    ]
    assert tasks[0]["id"] == tasks[1]["id"] != tasks[2]["id"]
    assert tasks[3]["error"] is None
    assert tasks[3]["result"]["messages"][0]["type"] == "ai"

    assert _events(asked) == ["metadata", "tasks", "tasks", "end"]
    started, ended = _of(asked, "tasks")
    assert started["name"] == ended["name"] == "ask_city"
    assert [i["id"] for i in ended["interrupts"]] == [a["approval_id"] for a in approvals]


async def test_a_v1_stream_of_the_run_an_sdk_client_joins_carries_no_per_step_output(
    open_live: Any, stub: OpenAIStub
) -> None:
    stub.reply('{"intent": "answer", "query": "x"}')
    stub.hold("Retrieval finds the passages an answer needs.")
    async with open_live(**stub.app_settings()) as (client, services), sdk_client(client) as sdk:
        started = asyncio.create_task(client.post("/v1/chat", json={"message": "What is x?"}))
        await asyncio.wait_for(stub.holding.wait(), WAIT_SECONDS)
        thread_id = (await client.get("/v1/threads")).json()["threads"][0]["thread_id"]
        (run,) = await sdk.runs.list(thread_id)
        stream = services.executor.active_stream(thread_id)
        assert stream.graph_modes == frozenset()  # a /v1 run: nothing recorded for nobody

        joined = asyncio.create_task(parts(sdk.runs.join_stream(thread_id, run["run_id"])))
        followed = asyncio.create_task(client.get(f"/v1/threads/{thread_id}/stream"))
        async with asyncio.timeout(WAIT_SECONDS):  # both follow the run before it goes on
            while stream.listeners < 3:  # noqa: ASYNC110 - no event exists for this
                await asyncio.sleep(0.01)
        stub.release()
        v1_chat, sdk_join, v1_join = (await started).text, await joined, (await followed).text

    joins = {"values", "updates", "tasks", "messages", "custom"}  # a join's, its subgraphs' too
    assert stream.graph_modes == joins | {f"subgraphs:{mode}" for mode in joins}
    # The SDK's join got the step that ended after it joined, as LangGraph streams it.
    assert _events(sdk_join)[-5:] == ["messages", "updates", "tasks", "values", "end"]
    assert list(_of(sdk_join, "updates")[-1]) == ["answer_question"]
    # The /v1 streams carry Consentry's events only (each one parses as one).
    for body in (v1_chat, v1_join):
        names = [frame.event for frame in parse_frames(body)]
        assert names == [event.type for event in parse_events(body)]
        assert not [name for name in names if name.startswith("graph:")]
        assert names[-1] == "final"


async def test_a_run_nobody_asked_for_per_step_output_serializes_none(
    open_live: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    serialized: list[str] = []
    graph_output_json = _output_recording.graph_output_json

    def counted(mode: str, chunk: Any, **where: Any) -> str | None:
        serialized.append(mode)
        return graph_output_json(mode, chunk, **where)

    monkeypatch.setattr(_output_recording, "graph_output_json", counted)
    async with open_live() as (client, _), sdk_client(client) as sdk:
        v1 = await client.post("/v1/chat", json={"message": "What is retrieval?"})
        by_v1 = list(serialized)
        await parts(sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode=["updates"]))
        by_updates = serialized[len(by_v1) :]
        await parts(sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode=["messages-tuple"]))
        by_tuples = serialized[len(by_v1) + len(by_updates) :]

    assert v1.status_code == 200
    assert by_v1 == []
    assert by_updates == ["updates", "updates"]  # only the mode asked for, once a step
    assert len(by_tuples) > 3  # one a token
    assert set(by_tuples) == {"messages"}


async def test_stream_subgraphs_adds_the_subgraphs_outputs_named_by_their_namespace(
    open_live: Any,
) -> None:
    modes = ["updates", "values"]
    async with open_live(graphs=TRIP) as (client, _), sdk_client(client) as sdk:
        plain = await parts(sdk.runs.stream(None, "trip", input=PLAN, stream_mode=modes))
        nested = await parts(
            sdk.runs.stream(None, "trip", input=PLAN, stream_mode=modes, stream_subgraphs=True)
        )
        thread_id = nested[0].data["thread_id"]
        asked = (await client.get("/v1/approvals", params={"status": "pending"})).json()
        done = await parts(
            sdk.runs.stream(
                thread_id,
                "trip",
                command={"resume": {i["id"]: "Oslo" for i in _interrupts(nested)}},
                stream_mode=modes,
                stream_subgraphs=True,
            )
        )

    subgraph = [p for p in nested if "|" in p.event]
    # The graph's own frames are those of the run that did not ask for its subgraphs...
    assert [p.event for p in nested if "|" not in p.event] == [p.event for p in plain]
    assert not any("|" in p.event for p in plain)
    # ...and the subgraph's come beside them, named `<mode>|<namespace>` as LangGraph names them.
    assert {p.event.split("|")[0] for p in subgraph} == {"updates", "values"}
    assert all(p.event.split("|")[1].startswith("plan:") for p in subgraph)
    # Each parallel question as the subgraph asked it, under the id the inbox has for it.
    updates = [p.data for p in subgraph if p.event.startswith("updates|")]
    ids = {i["id"] for update in updates for i in update["__interrupt__"]}
    assert len(updates) == len(ids) == 2
    assert ids == {i["id"] for i in _interrupts(nested)}
    assert ids <= {a["approval_id"] for a in asked["approvals"]}
    assert {"updates|" + p.event.split("|", 1)[1] for p in subgraph} <= {
        p.event for p in done if p.event.startswith("updates|")
    }
    # The answers resumed the subgraph: its summary is in its own state, then the graph's.
    summaries = [
        p.data["messages"][-1]["content"] for p in done if p.event.startswith("values|plan:")
    ]
    assert summaries[-1] == "From Oslo to Oslo."
    states = [v for v in _of(done, "values") if "__interrupt__" not in v]
    assert states[-1]["messages"][-1]["content"] == "From Oslo to Oslo."
    assert done[-1].data["status"] == "interrupted"  # then the graph asks to book it


def _interrupts(frames: list[Any]) -> list[dict[str, Any]]:
    (waiting,) = [p.data for p in frames if p.event == "values" and "__interrupt__" in p.data]
    interrupts: list[dict[str, Any]] = waiting["__interrupt__"]
    return interrupts


async def test_a_mode_the_agent_server_does_not_have_is_refused_by_name(open_live: Any) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        with pytest.raises(UnprocessableEntityError) as alone:
            await parts(sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode="tokens"))  # type: ignore[arg-type]
        with pytest.raises(UnprocessableEntityError) as among:
            await parts(
                sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode=["values", "tokens"])  # type: ignore[list-item]
            )
        threads = (await client.get("/v1/threads")).json()["threads"]

    for refused in (alone, among):
        error = refused.value.response.json()["error"]
        assert error["code"] == "request_invalid"
        assert {tuple(e["loc"][:2]) for e in error["details"]["errors"]} == {
            ("body", "stream_mode")
        }
    assert threads == []  # refused before anything ran
