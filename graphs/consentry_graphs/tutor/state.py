"""The tutor's state and what the server sends it for a new message."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

__all__ = ["INTENTS", "Intent", "NothingToDraft", "TutorInput", "TutorState"]

Intent = Literal["answer", "search", "edit_note", "delete_note", "remember", "review"]
NothingToDraft = Literal["nothing_discussed", "nothing_new", "no_notes"]
"""Why a summary or a review was not proposed: no question was answered yet in this
conversation, the note already says all of it, or the project has no notes to review."""
INTENTS: tuple[Intent, ...] = (
    "answer",
    "search",
    "edit_note",
    "delete_note",
    "remember",
    "review",
)


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
    nothing_to_draft: NothingToDraft | None
    """Set instead of ``proposal`` when a summary or a review was asked for but there is none to
    propose."""
    drafted_summary: str | None
    """The summary section of the pending proposal, as the model drafted it."""
    written_summaries: dict[str, str]
    """Note id → the summary section as the model drafted it, the last time this conversation
    wrote it into that note: the tutor's own words, which its next summary there may rewrite
    (``summaries.with_summary``)."""
