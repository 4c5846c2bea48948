"""The tutor's state and what the server sends it for a new message."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

__all__ = ["INTENTS", "Intent", "TutorInput", "TutorState"]

Intent = Literal["answer", "search", "edit_note", "delete_note"]
INTENTS: tuple[Intent, ...] = ("answer", "search", "edit_note", "delete_note")


class TutorInput(TypedDict):
    """What the server sends for a new user message."""

    messages: list[AnyMessage]
    project_id: str
    note_id: str | None


class TutorState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    project_id: str
    note_id: str | None
    """The note the user has open, if any."""
    intent: Intent
    query: str
    found_notes: list[dict[str, Any]]
    proposal: dict[str, Any] | None
    """The pending proposal of the current consent (its kind follows from the node)."""
    decision: dict[str, Any] | None
    """The decision on it, as ``TypedDecision.to_state()``; read it back with ``KIND.restore``."""
