"""``graph_output_json``: LangGraph's ``values``, ``updates`` and ``tasks`` chunks as the JSON the
LangGraph SDK reads (messages as their ``model_dump()``, an interrupt as ``{"value", "id"}``),
with the run they come from; an interrupt is left out of the state (the SDK face sends it in a
frame of its own), a cached replay's ``__metadata__`` out of the updates."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langgraph.types import Interrupt

from consentry.runtime.runs.execute._graph_outputs import graph_output_json, split_output

ASKED = Interrupt(value={"question": "Which city?"}, id="approval-1")


def _shown(mode: str, chunk: Any) -> Any:
    output = graph_output_json(mode, chunk, run_id="r1")
    if output is None:
        return None
    parsed = json.loads(output)
    assert parsed["run_id"] == "r1"
    return parsed["chunk"]


def test_values_are_the_state_with_messages_dumped_and_without_the_interrupt() -> None:
    state = {"messages": [HumanMessage("Plan", id="m1")], "city": "Oslo"}

    shown = _shown("values", {**state, "__interrupt__": (ASKED,)})

    assert shown == {"messages": [HumanMessage("Plan", id="m1").model_dump()], "city": "Oslo"}
    assert _shown("values", {"__interrupt__": (ASKED,)}) is None  # only the interrupt
    assert _shown("values", "a single channel") == {"__root__": "a single channel"}


def test_updates_name_their_node_and_an_interrupt_by_its_id() -> None:
    reply = AIMessage("Booked.", id="m2")

    assert _shown("updates", {"book_trip": {"messages": [reply]}}) == {
        "book_trip": {"messages": [reply.model_dump()]}
    }
    assert _shown("updates", {"__interrupt__": (ASKED,)}) == {
        "__interrupt__": [{"value": {"question": "Which city?"}, "id": "approval-1"}]
    }
    cached = {"ask_city": {"city": "Oslo"}, "__metadata__": {"cached": True}}
    assert _shown("updates", cached) == {"ask_city": {"city": "Oslo"}}


def test_tasks_are_as_langgraph_gives_them() -> None:
    started = {"id": "t1", "name": "ask_city", "input": {"city": None}, "triggers": ("start",)}

    assert _shown("tasks", started) == {**started, "triggers": ["start"]}


def test_a_subgraphs_token_names_its_namespace_its_message_and_langgraphs_metadata() -> None:
    token = AIMessageChunk("Ber", id="m3")
    metadata = {
        "langgraph_node": "summarize",
        "langgraph_checkpoint_ns": "plan:1|summarize:2",
        "langgraph_triggers": ("branch:to:summarize",),
        "ls_model_name": "x",
    }
    own = {"consentry_run_id": "r1", "consentry_input": 0, "__pregel_secret": object()}

    output = graph_output_json(
        "messages",
        (token, {**metadata, **own}),
        run_id="r1",
        namespace=("plan:1",),
        message_id="m3",
    )

    assert output is not None
    assert json.loads(output) == {
        "run_id": "r1",
        "ns": ["plan:1"],
        "id": "m3",
        "chunk": [token.model_dump(), {**metadata, "langgraph_triggers": ["branch:to:summarize"]}],
    }


def test_a_face_splits_an_output_into_its_run_and_its_chunk_as_sent() -> None:
    tricky = {"messages": [HumanMessage('He said ,"chunk": then left', id="m4")]}

    head, chunk = split_output(
        graph_output_json("values", tricky, run_id="r1", namespace=("plan:1",)) or ""
    )

    assert head == {"run_id": "r1", "ns": ["plan:1"]}
    assert json.loads(chunk) == {"messages": [tricky["messages"][0].model_dump()]}


def test_a_checkpoint_names_only_its_thread_namespace_and_id() -> None:
    run_objects = {"__consentry_run__": object(), "persona": "kind"}
    config = {
        "configurable": {"thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": "c2"}
        | run_objects
    }
    parent = {"configurable": {"thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": "c1"}}
    chunk = {
        "config": config,
        "parent_config": parent,
        "values": {"messages": [HumanMessage("Plan", id="m1")]},
        "metadata": {"source": "loop", "step": 1},
        "next": ["book"],
        "tasks": [{"id": "t", "name": "book", "interrupts": ()}],
    }

    shown = _shown("checkpoints", chunk)
    debug = _shown("debug", {"type": "checkpoint", "step": 1, "timestamp": "now", "payload": chunk})

    assert shown == {
        "config": {"configurable": {"thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": "c2"}},
        "parent_config": parent,
        "values": {"messages": [HumanMessage("Plan", id="m1").model_dump()]},
        "metadata": {"source": "loop", "step": 1},
        "next": ["book"],
        "tasks": [{"id": "t", "name": "book", "interrupts": []}],
    }
    assert debug == {"type": "checkpoint", "step": 1, "timestamp": "now", "payload": shown}
    assert _shown("checkpoints", {**chunk, "parent_config": None})["parent_config"] is None
