"""What a line typed as the answer to a raw ``interrupt(value)`` says, and what the value asks.

- :func:`parse_answer`: JSON when the line is JSON, else the text typed (``Lisbon`` is
  ``"Lisbon"``, ``30`` is the number 30).
- A yes/no question, whose ``response_schema`` is one boolean (:func:`is_yes_no`; the web app
  gives it a Yes and a No button): :func:`parse_yes_no` reads ``yes``/``no``, ``y``/``n`` and
  ``true``/``false``, in any case; any other line is no answer.
- :func:`question_of`: the question a value asks, in words (the web app's ``questionOf``).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

__all__ = ["is_yes_no", "parse_answer", "parse_yes_no", "question_of"]

QUESTION_KEYS = ("question", "message", "text", "prompt")
"""The fields of a graph's value that say its question, in the order looked for."""
_YES = frozenset({"yes", "y", "true"})
_NO = frozenset({"no", "n", "false"})


def parse_answer(line: str) -> JsonValue:
    """A typed answer to a raw interrupt: JSON when it is JSON, else the text as it was typed
    (without the spaces around it)."""
    text = line.strip()
    try:
        value: JsonValue = json.loads(text)
    except json.JSONDecodeError:
        return text
    return value


def is_yes_no(schema: dict[str, Any] | None) -> bool:
    """The answer is yes or no: the schema's type is one boolean (``{"type": "boolean"}``, or
    ``["boolean"]``), whatever else it says (a ``description``)."""
    if schema is None:
        return False
    kind = schema.get("type")
    return kind == "boolean" or kind == ["boolean"]


def parse_yes_no(line: str) -> bool | None:
    """``True`` for yes, ``y`` or ``true``; ``False`` for no, ``n`` or ``false`` (any case,
    spaces around ignored); ``None`` for anything else."""
    word = line.strip().lower()
    if word in _YES:
        return True
    if word in _NO:
        return False
    return None


def question_of(value: JsonValue) -> str | None:
    """The question ``value`` asks in words: the value itself when it is text, else its
    ``question``, ``message``, ``text`` or ``prompt`` field; ``None`` when it has none."""
    if isinstance(value, str):
        return value if value.strip() else None
    if not isinstance(value, dict):
        return None
    for key in QUESTION_KEYS:
        said = value.get(key)
        if isinstance(said, str) and said.strip():
            return said
    return None
