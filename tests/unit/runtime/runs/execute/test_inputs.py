"""A run's graph inputs are stored as JSON and read back by the worker or the recovery that
executes the run: every kind of input comes back as it went in."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Command

from consentry.runtime.runs.execute._inputs import dump_inputs, load_inputs
from consentry.runtime.runs.execute._run_types import GraphInput


def _round_trip(inputs: list[GraphInput]) -> list[GraphInput]:
    return load_inputs(json.loads(json.dumps(dump_inputs(inputs))))


def _same(inputs: list[GraphInput]) -> list[Any]:
    return [("resume", i.resume) if isinstance(i, Command) else i for i in inputs]


def test_a_message_a_resume_and_a_continuation_come_back_as_they_went_in() -> None:
    inputs: list[GraphInput] = [
        Command(resume={"a1": {"decision": "approve"}}),
        None,
        {"messages": [HumanMessage("Hi", id="msg-1")], "project_id": "p1", "note_id": None},
    ]

    assert _same(_round_trip(inputs)) == _same(inputs)


def test_a_message_is_stored_the_way_runs_always_were() -> None:
    """A queued run stored by an older server still loads, and an older worker reads this."""
    message = HumanMessage("Hi", id="msg-1")

    dumped = dump_inputs([{"messages": [message], "project_id": "p1", "note_id": None}])

    assert dumped == [
        {
            "input": {"project_id": "p1", "note_id": None},
            "messages": [
                {"type": "human", "data": message.model_dump()},
            ],
        }
    ]


def test_an_input_without_messages_comes_back_as_it_went_in() -> None:
    inputs: list[GraphInput] = [{"text": "one two", "min_length": 2, "tags": ["a", {"b": None}]}]

    assert dump_inputs(inputs) == [{"input": inputs[0]}]
    assert _round_trip(inputs) == inputs


def test_messages_given_as_json_come_back_as_json() -> None:
    """A field named ``messages`` that the graph keeps as plain JSON (no ``add_messages``)."""
    inputs: list[GraphInput] = [{"messages": [{"role": "user", "content": "Hi"}], "city": "Rome"}]

    assert _round_trip(inputs) == inputs


def test_messages_in_any_field_come_back_as_messages() -> None:
    inputs: list[GraphInput] = [
        {
            "messages": [HumanMessage("Hi", id="msg-1")],
            "history": [HumanMessage("Before", id="msg-0"), AIMessage("Yes", id="msg-00")],
            "messages_seen": [],
        }
    ]

    assert _round_trip(inputs) == inputs
