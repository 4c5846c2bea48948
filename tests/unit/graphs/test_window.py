"""``consentry_graphs.window.outside_window``: the removals that keep a graph's ``messages`` to the
last ``keep`` of them, starting at a user message, applied through LangGraph's ``add_messages``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.graph.message import add_messages

from consentry_graphs.window import DEFAULT_CONVERSATION_WINDOW, outside_window


def _turns(count: int) -> list[AnyMessage]:
    """``count`` question/answer turns: h1, a1, h2, a2, ..."""
    messages: list[AnyMessage] = []
    for n in range(1, count + 1):
        messages += [
            HumanMessage(f"question {n}", id=f"h{n}"),
            AIMessage(f"answer {n}", id=f"a{n}"),
        ]
    return messages


def _tool_turn(n: int) -> list[AnyMessage]:
    """A user turn whose answer needed a tool: question, tool call, tool result, answer."""
    return [
        HumanMessage(f"question {n}", id=f"h{n}"),
        AIMessage(
            "",
            id=f"call{n}",
            tool_calls=[{"name": "search_notes", "args": {"query": "rag"}, "id": f"tc{n}"}],
        ),
        ToolMessage("found RAG", tool_call_id=f"tc{n}", id=f"tool{n}"),
        AIMessage(f"answer {n}", id=f"a{n}"),
    ]


def _reduce(state: Sequence[BaseMessage], update: Sequence[BaseMessage]) -> list[AnyMessage]:
    """A graph's ``messages`` after a node's update, through LangGraph's reducer."""
    merged: Any = add_messages(cast(Any, list(state)), cast(Any, list(update)))
    return cast(list[AnyMessage], merged)


def _removed(removals: list[RemoveMessage]) -> list[str | None]:
    return [removal.id for removal in removals]


def _ids(messages: Sequence[BaseMessage]) -> list[str | None]:
    return [message.id for message in messages]


def test_the_default_window_is_forty_messages() -> None:
    assert DEFAULT_CONVERSATION_WINDOW == 40


def test_nothing_is_removed_under_the_window() -> None:
    assert outside_window(_turns(1), 4) == []
    assert outside_window(_turns(1)[:1], 4) == []


def test_nothing_is_removed_at_the_window() -> None:
    assert outside_window(_turns(2), 4) == []


def test_an_empty_conversation_removes_nothing() -> None:
    assert outside_window([], 2) == []


def test_past_the_window_exactly_the_oldest_messages_are_removed() -> None:
    removals = outside_window(_turns(5), 4)

    assert all(isinstance(removal, RemoveMessage) for removal in removals)
    assert _removed(removals) == ["h1", "a1", "h2", "a2", "h3", "a3"]


def test_a_new_question_past_the_window_drops_the_oldest_whole_turn() -> None:
    """What ``analyze_message`` sees: the earlier turns plus the new question."""
    messages = [*_turns(2), HumanMessage("question 3", id="h3")]

    assert _removed(outside_window(messages, 4)) == ["h1", "a1"]


def test_a_cut_on_an_assistant_message_moves_forward_to_the_next_user_message() -> None:
    messages = [*_turns(2), HumanMessage("question 3", id="h3")]
    # The last 4 would start at a1: a reply without its question is not kept, so 3 stay.

    assert _removed(outside_window(messages, 4)) == ["h1", "a1"]


def test_a_cut_on_a_tool_call_keeps_neither_the_call_nor_its_result_without_the_question() -> None:
    messages = [*_tool_turn(1), *_tool_turn(2)]
    # The last 7 start at the first turn's tool call (call1).

    removals = outside_window(messages, 7)

    assert _removed(removals) == ["h1", "call1", "tool1", "a1"]


def test_a_cut_on_a_tool_result_moves_forward_to_the_next_user_message() -> None:
    messages = [*_tool_turn(1), *_tool_turn(2)]
    # The last 6 start at the first turn's tool result (tool1).

    removals = outside_window(messages, 6)

    assert _removed(removals) == ["h1", "call1", "tool1", "a1"]


def test_a_window_with_no_user_message_in_it_keeps_nothing() -> None:
    """Never a reply or a tool result without the question that led to it."""
    messages = _tool_turn(1)

    assert _removed(outside_window(messages, 3)) == ["h1", "call1", "tool1", "a1"]


def test_messages_without_an_id_are_never_removed_as_id_none() -> None:
    messages: list[AnyMessage] = [
        HumanMessage("question 1"),
        AIMessage("answer 1"),
        HumanMessage("question 2", id="h2"),
        AIMessage("answer 2", id="a2"),
        HumanMessage("question 3", id="h3"),
        AIMessage("answer 3", id="a3"),
    ]

    removals = outside_window(messages, 2)

    assert _removed(removals) == ["h2", "a2"]
    assert all(removal.id not in (None, "None") for removal in removals)


def test_the_removals_applied_by_add_messages_leave_the_last_window() -> None:
    state = _reduce([], _turns(5))

    kept = _reduce(state, outside_window(state, 4))

    assert _ids(kept) == ["h4", "a4", "h5", "a5"]
    assert [message.content for message in kept] == [
        "question 4",
        "answer 4",
        "question 5",
        "answer 5",
    ]


def test_the_removals_applied_by_add_messages_start_the_state_at_a_user_message() -> None:
    state = _reduce([], [*_tool_turn(1), *_tool_turn(2), HumanMessage("question 3", id="h3")])

    kept = _reduce(state, outside_window(state, 7))

    assert _ids(kept) == ["h2", "call2", "tool2", "a2", "h3"]
    assert isinstance(kept[0], HumanMessage)


def test_messages_given_ids_by_add_messages_are_removed_by_those_ids() -> None:
    """A state built by ``add_messages`` has an id on every message, even one sent without."""
    state = _reduce([], [HumanMessage("question 1"), AIMessage("answer 1")])
    state = _reduce(state, [HumanMessage("question 2"), AIMessage("answer 2")])
    state = _reduce(state, [HumanMessage("question 3")])

    kept = _reduce(state, outside_window(state, 2))

    assert [message.content for message in kept] == ["question 3"]
    assert _ids(kept) == [state[-1].id]


def test_a_window_applied_turn_after_turn_never_grows_past_its_size() -> None:
    state: list[AnyMessage] = []
    for n in range(1, 9):
        state = _reduce(state, [HumanMessage(f"question {n}", id=f"h{n}")])
        state = _reduce(state, outside_window(state, 4))
        assert len(state) <= 4
        assert isinstance(state[0], HumanMessage)
        state = _reduce(state, [AIMessage(f"answer {n}", id=f"a{n}")])

    assert _ids(state) == ["h7", "a7", "h8", "a8"]
