"""Conditional edges of the tutor."""

from __future__ import annotations

from typing import Literal

from graphs.tutor.state import TutorState

__all__ = ["route_after_analyze_message", "route_after_request_note_edit_consent"]


def route_after_analyze_message(
    state: TutorState,
) -> Literal["answer_question", "search_notes", "draft_note_edit"]:
    intent = state.get("intent", "answer")
    if intent == "search":
        return "search_notes"
    if intent == "edit_note":
        return "draft_note_edit"
    return "answer_question"


def route_after_request_note_edit_consent(
    state: TutorState,
) -> Literal["apply_note_edit", "skip_note_edit"]:
    decision = state.get("decision") or {}
    return (
        "apply_note_edit" if decision.get("decision") in ("approve", "edit") else "skip_note_edit"
    )
