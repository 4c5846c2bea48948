"""What continues the work of a run that stopped half-way (``runtime.continuation``), from where
its graph stands and the inputs the run was claimed with."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.types import Command

from consentry.runtime.runs.execute._executor import GraphInput, GraphPosition
from consentry.runtime.runs.start._continuation import continuation

RUN = "run-1"
MESSAGE: dict[str, Any] = {"messages": [HumanMessage("Hi", id="msg-1")], "note_id": None}
DECISION = {"approval_id": "a1", "decision": "approve"}
REJECTION = {"approval_id": "a0", "decision": "reject"}


def _at(
    *,
    written_by: str | None = RUN,
    input_index: int | None = 0,
    unfinished: bool = False,
    waiting: frozenset[str] = frozenset(),
) -> GraphPosition:
    return GraphPosition(
        waiting=waiting, unfinished=unfinished, written_by=written_by, input_index=input_index
    )


def _same(inputs: list[GraphInput]) -> list[Any]:
    """Inputs in a comparable form (``Command`` compares by identity of its fields)."""
    return [("resume", i.resume) if isinstance(i, Command) else i for i in inputs]


def test_a_run_whose_graph_never_checkpointed_its_inputs_gets_them_all_again() -> None:
    inputs: list[GraphInput] = [Command(resume={"a0": REJECTION}), MESSAGE]
    position = _at(written_by="an-earlier-run", waiting=frozenset({"a0"}))

    again = continuation(position, {"a0": REJECTION}, run_id=RUN, inputs=inputs)

    assert _same(again) == [("resume", {"a0": REJECTION}), MESSAGE]


def test_decisions_recorded_meanwhile_join_the_first_resume_of_a_run_given_again() -> None:
    position = _at(written_by=None, input_index=None, waiting=frozenset({"a1"}))

    again = continuation(position, {"a1": DECISION}, run_id=RUN, inputs=[MESSAGE])

    assert _same(again) == [("resume", {"a1": DECISION}), MESSAGE]


def test_unfinished_nodes_run_again_then_the_inputs_the_run_had_not_reached() -> None:
    inputs: list[GraphInput] = [Command(resume={"a0": REJECTION}), MESSAGE]

    rest = continuation(_at(unfinished=True), {}, run_id=RUN, inputs=inputs)

    assert _same(rest) == [None, MESSAGE]


def test_consents_waiting_with_recorded_decisions_are_resumed_with_them() -> None:
    position = _at(input_index=1, waiting=frozenset({"a1"}))

    rest = continuation(position, {"a1": DECISION}, run_id=RUN, inputs=[None, MESSAGE])

    assert _same(rest) == [("resume", {"a1": DECISION})]


def test_a_graph_that_reached_its_end_or_a_consent_leaves_nothing_to_run() -> None:
    assert continuation(_at(), {}, run_id=RUN, inputs=[MESSAGE]) == []
    waiting = _at(waiting=frozenset({"a1"}))
    assert continuation(waiting, {}, run_id=RUN, inputs=[MESSAGE]) == []


def test_a_run_from_before_inputs_were_stored_continues_what_the_checkpoint_shows() -> None:
    assert continuation(_at(written_by=None, unfinished=True), {}, run_id=RUN, inputs=None) == [
        None
    ]
    assert continuation(_at(written_by=None), {}, run_id=RUN, inputs=None) == []
