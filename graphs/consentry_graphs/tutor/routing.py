"""Conditional edges of the tutor."""

from __future__ import annotations

from typing import Literal

from consentry_graphs.tutor.consents import NOTE_CREATE, NOTE_DELETE, NOTE_EDIT
from consentry_graphs.tutor.state import TutorState

__all__ = [
    "route_after_analyze_message",
    "route_after_draft_note_creation",
    "route_after_draft_note_deletion",
    "route_after_draft_note_edit",
    "route_after_draft_note_review",
    "route_after_request_note_create_consent",
    "route_after_request_note_delete_consent",
    "route_after_request_note_edit_consent",
]


def route_after_analyze_message(
    state: TutorState,
) -> Literal[
    "answer_question",
    "search_notes",
    "draft_note_edit",
    "draft_note_creation",
    "draft_note_deletion",
    "draft_note_review",
    "report_no_open_note",
    "remember_preference",
]:
    intent = state.get("intent", "answer")
    note_open = bool(state.get("note_id"))
    if intent == "search":
        return "search_notes"
    if intent == "remember":
        return "remember_preference"
    if intent == "review":
        return "draft_note_review"
    if intent == "edit_note":
        return "draft_note_edit" if note_open else "draft_note_creation"
    if intent == "delete_note":
        return "draft_note_deletion" if note_open else "report_no_open_note"
    return "answer_question"


def route_after_draft_note_edit(
    state: TutorState,
) -> Literal["request_note_edit_consent", "report_nothing_to_draft", "report_no_open_note"]:
    if state.get("proposal"):
        return "request_note_edit_consent"
    return "report_nothing_to_draft" if state.get("nothing_to_draft") else "report_no_open_note"


def route_after_draft_note_creation(
    state: TutorState,
) -> Literal["request_note_create_consent", "report_nothing_to_draft"]:
    return "request_note_create_consent" if state.get("proposal") else "report_nothing_to_draft"


route_after_draft_note_review = route_after_draft_note_creation
"""A review is proposed as a new note: it asks the ``note_create`` consent, or says why not."""


def route_after_draft_note_deletion(
    state: TutorState,
) -> Literal["request_note_delete_consent", "report_no_open_note"]:
    return "request_note_delete_consent" if state.get("proposal") else "report_no_open_note"


def route_after_request_note_edit_consent(
    state: TutorState,
) -> Literal["apply_note_edit", "skip_note_edit"]:
    approved = NOTE_EDIT.restore(state["decision"]).approved
    return "apply_note_edit" if approved else "skip_note_edit"


def route_after_request_note_create_consent(
    state: TutorState,
) -> Literal["create_note", "skip_note_creation"]:
    approved = NOTE_CREATE.restore(state["decision"]).approved
    return "create_note" if approved else "skip_note_creation"


def route_after_request_note_delete_consent(
    state: TutorState,
) -> Literal["delete_note", "keep_note"]:
    return "delete_note" if NOTE_DELETE.restore(state["decision"]).approved else "keep_note"
