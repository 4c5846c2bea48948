"""What a typed answer to a raw ``interrupt()`` says: JSON when it is JSON, else the text; for a
yes/no question (a boolean ``response_schema``), ``yes``/``no``, ``y``/``n`` or ``true``/``false``
in any case (issue 33: "the terminal refuses `yes` for a boolean"); and the question a value
asks, in words."""

from __future__ import annotations

from typing import Any

import pytest

from consentry.terminal.answers import is_yes_no, parse_answer, parse_yes_no, question_of


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("Lisbon", "Lisbon"),
        ('"Lisbon"', "Lisbon"),
        ("  Porto  ", "Porto"),
        ("30", 30),
        ("true", True),
        ("null", None),
        ('{"city": "Oslo", "nights": 2}', {"city": "Oslo", "nights": 2}),
        ("Lisbon, then Porto", "Lisbon, then Porto"),
        ("yes", "yes"),  # text, unless the question is a yes/no one
    ],
)
def test_an_answer_is_json_when_it_is_json_and_else_the_text_typed(line: str, value: Any) -> None:
    assert parse_answer(line) == value


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        ("yes", True),
        ("YES", True),
        ("Yes", True),
        ("y", True),
        ("Y", True),
        ("true", True),
        ("True", True),
        ("  yes  ", True),
        ("no", False),
        ("NO", False),
        ("n", False),
        ("N", False),
        ("false", False),
        ("FALSE", False),
    ],
)
def test_a_yes_no_answer_is_yes_no_y_n_true_or_false_in_any_case(line: str, answer: bool) -> None:
    assert parse_yes_no(line) is answer


@pytest.mark.parametrize("line", ["", " ", "yep", "nope", "1", "0", "ja", "yes!", "y n", '"yes"'])
def test_any_other_line_is_no_yes_no_answer(line: str) -> None:
    assert parse_yes_no(line) is None


@pytest.mark.parametrize(
    ("schema", "yes_no"),
    [
        ({"type": "boolean"}, True),
        ({"type": ["boolean"]}, True),
        ({"type": "boolean", "description": "Send it?"}, True),
        ({"type": ["boolean", "null"]}, False),
        ({"type": "string", "enum": ["yes", "no"]}, False),
        ({"type": "integer"}, False),
        ({}, False),
        (None, False),
    ],
)
def test_a_question_is_yes_no_when_its_schema_is_one_boolean(
    schema: dict[str, Any] | None, yes_no: bool
) -> None:
    assert is_yes_no(schema) is yes_no


@pytest.mark.parametrize(
    ("value", "question"),
    [
        ("Send it?", "Send it?"),
        ("  ", None),
        ({"question": "Send it?", "report": "weekly.pdf"}, "Send it?"),
        ({"message": "Send it?"}, "Send it?"),
        ({"prompt": "Send it?", "question": "  "}, "Send it?"),
        ({"question": "First?", "text": "Second?"}, "First?"),
        ({"report": "weekly.pdf"}, None),
        ([1, 2], None),
        (None, None),
    ],
)
def test_the_question_of_a_value_is_its_text_or_its_question_field(
    value: Any, question: str | None
) -> None:
    assert question_of(value) == question
