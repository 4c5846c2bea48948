"""The rest of the LangGraph SDK's stream modes against Consentry, with the real ``langgraph-sdk``
client over real HTTP: ``messages-tuple`` with LangGraph's metadata, ``messages`` (the message so
far, as the Agent Server sends it), a graph's own ``custom`` output, ``checkpoints``, ``debug``
and ``events``, each live, with ``stream_subgraphs``, and a join that names its modes."""

from __future__ import annotations

import asyncio
from itertools import pairwise
from typing import Any

import pytest
from langgraph_sdk.errors import UnprocessableEntityError

from consentry.schemas.sdk_runs import STREAM_MODES
from tests.integration import gate_graph
from tests.langgraph_client import parts, sdk_client

CITY = "city=consentry_graphs.examples.ask_city:graph"
TRIP = "trip=consentry_graphs.examples.trip_subgraph:graph"
PROGRESS = "progress=tests.graph_forms:progress_writer"
GATE = gate_graph.SERVED
QUESTION = {"messages": [{"role": "user", "content": "What is retrieval?"}]}
PLAN = {"messages": [{"role": "user", "content": "Plan a trip"}]}


def _of(frames: list[Any], event: str) -> list[Any]:
    return [p.data for p in frames if p.event == event]


async def test_message_tuples_carry_langgraphs_metadata(open_live: Any) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        frames = await parts(
            sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode="messages-tuple")
        )

    tuples = _of(frames, "messages")
    assert len(tuples) > 3  # token by token
    message_ids = {message["id"] for message, _ in tuples}
    assert len(message_ids) == 1
    for message, metadata in tuples:
        assert message["type"] == "AIMessageChunk"
        assert metadata["langgraph_node"] == "answer_question"
        assert metadata["langgraph_step"] >= 1
        assert metadata["langgraph_triggers"]
        assert metadata["thread_id"] == frames[0].data["thread_id"]
        assert metadata["ls_model_type"] == "chat"
        # Consentry's own marks and private keys stay inside.
        assert not [key for key in metadata if key.startswith(("consentry_", "__"))]


async def test_messages_mode_sends_the_message_so_far_then_whole_ones_complete(
    open_live: Any,
) -> None:
    async with open_live(graphs=CITY) as (client, _), sdk_client(client) as sdk:
        answered = await parts(
            sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode=["messages", "values"])
        )
        asked = await parts(sdk.runs.stream(None, "city", input=PLAN, stream_mode="messages"))
        thread_id = asked[0].data["thread_id"]
        booked = await parts(
            sdk.runs.stream(thread_id, "city", command={"resume": "Oslo"}, stream_mode="messages")
        )

    names = [p.event for p in answered]
    assert "messages" not in names  # the tuples are another mode's
    first = names.index("messages/metadata")
    assert names[first + 1] == "messages/partial"
    partials = _of(answered, "messages/partial")
    texts = [message["content"] for (message,) in partials]
    assert len(texts) > 3
    for shorter, longer in pairwise(texts):
        assert longer.startswith(shorter)  # it grows token by token
    (metadata,) = _of(answered, "messages/metadata")
    ((message_id, meta),) = metadata.items()
    assert meta["metadata"]["langgraph_node"] == "answer_question"
    assert {message["id"] for (message,) in partials} == {message_id}
    assert partials[-1][0]["type"] == "ai"
    assert _of(answered, "values")[-1]["messages"][-1]["content"] == texts[-1]
    # A message a node wrote whole (its tokens never streamed) comes complete.
    assert _of(asked, "messages/complete") == []
    ((booking,),) = _of(booked, "messages/complete")
    assert booking["type"] == "ai"
    assert booking["content"] == "Booked a trip to Oslo."


async def test_a_graphs_own_stream_writer_reaches_custom_frames(open_live: Any) -> None:
    async with open_live(graphs=PROGRESS) as (client, _), sdk_client(client) as sdk:
        written = await parts(
            sdk.runs.stream(None, "progress", input=PLAN, stream_mode=["custom", "updates"])
        )
        without = await parts(sdk.runs.stream(None, "progress", input=PLAN, stream_mode="updates"))

    assert _of(written, "custom") == [
        {"progress": 50, "stage": "halfway"},
        {"progress": 100, "stage": "done"},
    ]
    names = [p.event for p in written]
    assert names.index("custom") < names.index("updates")  # as the node wrote it, before it ended
    assert _of(without, "custom") == []


async def test_checkpoints_are_each_steps_as_langgraph_streams_them(open_live: Any) -> None:
    async with open_live(graphs=PROGRESS) as (client, _), sdk_client(client) as sdk:
        frames = await parts(
            sdk.runs.stream(None, "progress", input=PLAN, stream_mode="checkpoints")
        )
        thread_id = frames[0].data["thread_id"]
        state = await sdk.threads.get_state(thread_id)

    checkpoints = _of(frames, "checkpoints")
    assert [c["next"] for c in checkpoints] == [["__start__"], ["report"], ["finish"], []]
    assert [c["metadata"]["step"] for c in checkpoints] == [-1, 0, 1, 2]
    for before, after in pairwise(checkpoints):
        assert after["parent_config"] == before["config"]
    last = checkpoints[-1]
    # Only what names a checkpoint: no object of the run's own configuration.
    assert last["config"] == {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": state["checkpoint"]["checkpoint_id"],  # the turn's, kept
        }
    }
    assert last["values"]["messages"][-1]["content"] == "Reported."


async def test_debug_tells_checkpoints_tasks_and_their_results(open_live: Any) -> None:
    async with open_live(graphs=PROGRESS) as (client, _), sdk_client(client) as sdk:
        frames = await parts(sdk.runs.stream(None, "progress", input=PLAN, stream_mode="debug"))

    debug = _of(frames, "debug")
    assert [(d["type"], d["step"]) for d in debug] == [
        ("checkpoint", -1),
        ("checkpoint", 0),
        ("task", 1),
        ("task_result", 1),
        ("checkpoint", 1),
        ("task", 2),
        ("task_result", 2),
        ("checkpoint", 2),
    ]
    assert [d["payload"]["name"] for d in debug if d["type"] == "task"] == ["report", "finish"]
    assert all(d["timestamp"] for d in debug)
    assert set(debug[-1]["payload"]["config"]["configurable"]) == {
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
    }


async def test_events_are_langchains_stream_events_of_the_run(open_live: Any) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        frames = await parts(sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode="events"))
        progress = await parts(
            sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode="updates")
        )

    events = _of(frames, "events")
    kinds = [e["event"] for e in events]
    assert kinds[0] == "on_chain_start"
    assert kinds[-1] == "on_chain_end"
    assert events[0]["run_id"] == events[-1]["run_id"]  # the graph's own run
    assert "on_chat_model_start" in kinds
    assert "on_chat_model_end" in kinds
    streamed = [e for e in events if e["event"] == "on_chat_model_stream"]
    # Every model call's tokens, those tagged `nostream` (the classifier's) among them.
    assert {e["metadata"]["langgraph_node"] for e in streamed} == {
        "analyze_message",
        "answer_question",
    }
    assert len(streamed) > 3
    nodes = {e["name"] for e in events if e["event"] == "on_chain_start"}
    assert {"tutor", "analyze_message", "answer_question"} <= nodes
    assert _of(progress, "events") == []  # only the run that asked has them
    # Consentry's own marks and private keys stay inside, as in the message tuples.
    assert not [k for e in events for k in e["metadata"] if k.startswith(("consentry_", "__"))]


async def test_a_sync_nodes_events_come_from_its_worker_thread_in_order(open_live: Any) -> None:
    async with open_live(graphs=PROGRESS) as (client, _), sdk_client(client) as sdk:
        frames = await parts(sdk.runs.stream(None, "progress", input=PLAN, stream_mode="events"))

    events = [(e["event"], e["name"]) for e in _of(frames, "events")]
    report = [e for e in events if e[1] == "report"]
    assert report[0] == ("on_chain_start", "report")
    assert report[-1] == ("on_chain_end", "report")
    # The event the node dispatched from its worker thread, in its place.
    start, end = events.index(report[0]), events.index(report[-1])
    assert events.index(("on_custom_event", "reported")) in range(start, end)
    assert ("on_custom_event", "progress") not in events  # a stream writer's is not an event
    assert events.index(("on_chain_start", "finish")) > end


async def test_stream_subgraphs_names_the_new_modes_by_namespace(open_live: Any) -> None:
    async with open_live(graphs=TRIP) as (client, _), sdk_client(client) as sdk:
        frames = await parts(
            sdk.runs.stream(
                None,
                "trip",
                input=PLAN,
                stream_mode=["checkpoints", "debug"],
                stream_subgraphs=True,
            )
        )

    names = {p.event for p in frames}
    own = [p.event for p in frames if "|" not in p.event]
    assert {"checkpoints", "debug"} <= set(own)
    nested = sorted(name.split("|")[0] for name in names if "|" in name)
    assert set(nested) == {"checkpoints", "debug"}
    namespaces = {name.split("|", 1)[1] for name in names if "|" in name}
    assert len(namespaces) == 1
    assert namespaces.pop().startswith("plan:")  # the subgraph's node and task, as LangGraph's


async def test_a_join_sends_the_modes_it_names(open_live: Any) -> None:
    async with open_live(graphs=CITY) as (client, _), sdk_client(client) as sdk:
        asked = await parts(sdk.runs.stream(None, "city", input=PLAN))
        thread_id, run_id = asked[0].data["thread_id"], asked[0].data["run_id"]
        named = await parts(sdk.runs.join_stream(thread_id, run_id, stream_mode=["updates"]))
        every = await parts(sdk.runs.join_stream(thread_id, run_id))
        with pytest.raises(UnprocessableEntityError) as refused:
            await parts(sdk.runs.join_stream(thread_id, run_id, stream_mode=["tokens"]))  # type: ignore[list-item]

    # An ended run's join reads the log: the end state comes in `values`, which it did not name.
    assert [p.event for p in named] == ["metadata", "end"]
    assert [p.event for p in every] == ["metadata", "values", "values", "end"]
    error = refused.value.response.json()["error"]
    assert error["code"] == "request_invalid"
    assert error["details"]["stream_mode"] == ["tokens"]


EVERY_MODE = list(STREAM_MODES)


def _sent(frames: list[Any]) -> list[tuple[str, str, Any]]:
    return [(p.event, p.id, p.data) for p in frames]


async def test_a_resumable_run_is_replayed_after_its_end_as_it_was_streamed(
    open_live: Any,
) -> None:
    async with open_live() as (client, _), sdk_client(client) as sdk:
        live = await parts(
            sdk.runs.stream(
                None, "tutor", input=QUESTION, stream_mode=EVERY_MODE, stream_resumable=True
            )
        )
        thread_id, run_id = live[0].data["thread_id"], live[0].data["run_id"]
        replayed = await parts(
            sdk.runs.join_stream(thread_id, run_id, stream_mode=EVERY_MODE, last_event_id="-1")
        )
        tokens = await parts(
            sdk.runs.join_stream(thread_id, run_id, stream_mode=["messages-tuple"])
        )
        plain = await parts(sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode=EVERY_MODE))
        plain_again = await parts(
            sdk.runs.join_stream(
                plain[0].data["thread_id"], plain[0].data["run_id"], stream_mode=EVERY_MODE
            )
        )

    # Every frame again, in its order, with its id: each token, each step's state, each event.
    assert {p.event for p in live} == {
        "metadata",
        *["values", "updates", "tasks", "messages", "checkpoints", "debug", "events"],
        *["messages/metadata", "messages/partial"],
        "end",
    }
    assert _sent(replayed) == _sent(live)
    # A join that names fewer modes gets those of them.
    assert [p.event for p in tokens] == [
        "metadata",
        *["messages"] * len(_of(live, "messages")),
        "end",
    ]
    # A run that was not resumable kept nothing: its join reads the log alone.
    assert [p.event for p in plain_again] == [
        *["metadata", "messages", "messages/metadata", "messages/complete"],
        *["values", "end"],
    ]


async def test_a_rejoin_after_an_id_gets_what_came_after_it_and_nothing_twice(
    open_live: Any,
) -> None:
    modes = ["values", "updates", "tasks", "messages-tuple"]
    async with open_live() as (client, _), sdk_client(client) as sdk:
        live = await parts(
            sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode=modes, stream_resumable=True)
        )
        thread_id, run_id = live[0].data["thread_id"], live[0].data["run_id"]
        ids = sorted({int(p.id) for p in live})
        after = {
            k: await parts(
                sdk.runs.join_stream(thread_id, run_id, stream_mode=modes, last_event_id=str(k))
            )
            for k in ids[:-1]
        }

    def past(frames: list[Any], k: int, *, tokens: bool) -> list[tuple[str, str, Any]]:
        return [f for f in _sent(frames) if int(f[1]) > k and (f[0] == "messages") == tokens]

    for k, rejoined in after.items():
        # What a client that had frame `k` lacks: every frame numbered past `k`. Those numbered
        # `k` itself it may have had some of: none of them comes again (a message whose tokens
        # were numbered `k` comes whole from the log instead).
        assert all(int(p.id) > k for p in rejoined), k
        expected = past(live, k, tokens=False)
        if not [f for f in expected if f[0] == "values"]:  # it had them all: the end state
            expected[-1:-1] = [("values", expected[-1][1], _of(live, "values")[-1])]
        assert past(rejoined, k, tokens=False) == expected, k
        tokens = past(live, k, tokens=True)
        assert tokens == past(rejoined, k, tokens=True)[: len(tokens)] or not tokens, k
    assert any(past(live, k, tokens=True) for k in after)  # the tokens were past some id


async def test_a_queued_resumable_run_keeps_what_its_waiting_stream_asked(
    open_live: Any, gate: asyncio.Event
) -> None:
    """A run that waited in the thread's queue (behind a run it interrupts) keeps the outputs
    its waiting stream asked for, from its first step."""
    modes = ["updates", "values"]
    async with open_live(graphs=GATE) as (client, _), sdk_client(client) as sdk:
        held = await sdk.runs.create(None, "gate", input=PLAN)
        thread_id = held["thread_id"]
        await asyncio.wait_for(gate_graph.REACHED.wait(), 10)
        gate_graph.REACHED.clear()
        waiting = asyncio.create_task(
            parts(
                sdk.runs.stream(
                    thread_id,
                    "gate",
                    input=PLAN,
                    stream_mode=modes,
                    stream_resumable=True,
                    multitask_strategy="interrupt",  # queued, and the held run is cut
                )
            )
        )
        await asyncio.wait_for(gate_graph.REACHED.wait(), 10)  # the queued run has started
        gate.set()
        queued = await asyncio.wait_for(waiting, 10)
        run_id = queued[0].data["run_id"]
        statuses = {run["run_id"]: run["status"] for run in await sdk.runs.list(thread_id)}
        again = await parts(sdk.runs.join_stream(thread_id, run_id, stream_mode=modes))

    assert statuses == {held["run_id"]: "interrupted", run_id: "interrupted"}  # cut; waits
    assert [p.event for p in queued if p.event == "updates"]  # its steps, as they ended
    assert _sent(again) == _sent(queued)


async def test_what_a_run_kept_is_forgotten_after_its_time_and_its_events_stay(
    open_live: Any, clock: Any
) -> None:
    modes = ["values", "messages-tuple"]
    async with (
        open_live(resumable_stream_seconds=60) as (client, services),
        sdk_client(client) as sdk,
    ):
        live = await parts(
            sdk.runs.stream(None, "tutor", input=QUESTION, stream_mode=modes, stream_resumable=True)
        )
        thread_id, run_id = live[0].data["thread_id"], live[0].data["run_id"]
        clock.advance(seconds=30)
        await services.expiry.prune_events()
        kept = await parts(sdk.runs.join_stream(thread_id, run_id, stream_mode=modes))
        clock.advance(seconds=31)
        await services.expiry.prune_events()
        forgotten = await parts(sdk.runs.join_stream(thread_id, run_id, stream_mode=modes))

    assert _sent(kept) == _sent(live)
    # Past its time: the run's stored events alone, its message whole, its end state.
    assert [p.event for p in forgotten] == ["metadata", "messages", "values", "end"]
    assert forgotten[1].data[0]["content"] == _of(live, "values")[-1]["messages"][-1]["content"]


async def test_a_join_after_a_subgraph_run_gets_the_subgraph_frames_it_kept(
    open_live: Any,
) -> None:
    modes = ["updates", "values"]
    async with open_live(graphs=TRIP) as (client, _), sdk_client(client) as sdk:
        live = await parts(
            sdk.runs.stream(
                None,
                "trip",
                input=PLAN,
                stream_mode=modes,
                stream_subgraphs=True,
                stream_resumable=True,
            )
        )
        thread_id, run_id = live[0].data["thread_id"], live[0].data["run_id"]
        joined = await parts(sdk.runs.join_stream(thread_id, run_id, stream_mode=modes))

    assert [p.event for p in live if "|" in p.event]  # the subgraph's, as it asked
    assert _sent(joined) == _sent(live)
