"""What a graph takes: a client's ``input`` is checked against the graph's input fields (unknown
fields, values of the wrong type, messages that are not messages are named), its messages made
messages with ids, every other value given as sent."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from consentry_graphs.examples import ask_city, word_count
from consentry_graphs.graph_io import GraphIO, InputMismatchError, describe_graph

WORDS = describe_graph(word_count.graph)
CITY = describe_graph(ask_city.graph)


def _ids() -> Any:
    numbers = iter(range(1, 100))
    return lambda: f"msg-{next(numbers)}"


def _problems(io: GraphIO, value: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    with pytest.raises(InputMismatchError) as raised:
        io.check_input(value)
    return [(p.loc, p.type) for p in raised.value.problems]


def test_an_input_that_fits_is_given_as_sent() -> None:
    assert WORDS.check_input({"text": "a b", "min_length": 2}) == {"text": "a b", "min_length": 2}


def test_every_field_that_does_not_fit_is_named() -> None:
    assert _problems(WORDS, {"text": 3, "min_length": "2", "colour": "red"}) == [
        (("text",), "string_type"),
        (("min_length",), "int_type"),  # strict: a string of digits is not an int
        (("colour",), "unknown_field"),
    ]


def test_an_unknown_field_says_which_fields_the_graph_takes() -> None:
    with pytest.raises(InputMismatchError) as raised:
        WORDS.check_input({"txt": "a b"})

    assert raised.value.problems[0].msg == (
        "not an input field of this graph (it takes: min_length, text)"
    )


def test_a_missing_field_is_not_a_mismatch() -> None:
    """An input is an update of the graph's state, as in LangGraph: a field may be left out."""
    assert WORDS.check_input({}) == {}


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("Lisbon?", [HumanMessage("Lisbon?", id="msg-1")]),
        ({"role": "user", "content": "Hi"}, [HumanMessage("Hi", id="msg-1")]),
        (
            [
                {"type": "human", "content": "Hi", "id": "mine"},
                {"role": "assistant", "content": "Yo"},
            ],
            [HumanMessage("Hi", id="mine"), AIMessage("Yo", id="msg-1")],
        ),
    ],
)
def test_messages_are_made_messages_with_ids(given: Any, expected: list[Any]) -> None:
    checked = CITY.check_input({"messages": given, "city": "Lisbon"}, new_id=_ids())

    assert checked == {"messages": expected, "city": "Lisbon"}


@pytest.mark.parametrize(
    "given", [[1], [{"content": "no role"}], [{"role": "alien", "content": "x"}], [["user", "x"]]]
)
def test_what_is_not_a_message_is_refused(given: Any) -> None:
    assert _problems(CITY, {"messages": given}) == [(("messages",), "invalid_messages")]


def test_which_fields_a_graph_takes() -> None:
    assert (WORDS.takes("text"), WORDS.takes("messages")) == (True, False)
    assert (CITY.takes("messages"), CITY.message_fields) == (True, {"messages"})


def test_the_problems_read_as_one_sentence() -> None:
    with pytest.raises(InputMismatchError, match=r"^text: Input should be a valid string$"):
        WORDS.check_input({"text": None})
