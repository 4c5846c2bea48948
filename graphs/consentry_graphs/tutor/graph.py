"""The tutor graph.

analyze_message → answer_question
                → search_notes → report_search_results
                → draft_note_edit → request_note_edit_consent → apply_note_edit | skip_note_edit
                                  → report_nothing_to_draft (nothing discussed, nothing new)
                → draft_note_creation → request_note_create_consent → create_note
                                                                     | skip_note_creation
                                      → report_nothing_to_draft
                → draft_note_review → request_note_create_consent → create_note
                                                                   | skip_note_creation
                                    → report_nothing_to_draft (no notes in the project)
                → draft_note_deletion → request_note_delete_consent → delete_note | keep_note
                → report_no_open_note (also after a draft whose note is gone)
                → remember_preference (the Store: ``memories``)
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from consentry_graphs.consent import ConsentKind
from consentry_graphs.tutor import consent_nodes
from consentry_graphs.tutor.consents import NOTE_CREATE, NOTE_DELETE, NOTE_EDIT
from consentry_graphs.tutor.memories import remember_preference
from consentry_graphs.tutor.nodes import TutorNodes, report_no_open_note, report_nothing_to_draft
from consentry_graphs.tutor.routing import (
    route_after_analyze_message,
    route_after_draft_note_creation,
    route_after_draft_note_deletion,
    route_after_draft_note_edit,
    route_after_draft_note_review,
    route_after_request_note_create_consent,
    route_after_request_note_delete_consent,
    route_after_request_note_edit_consent,
)
from consentry_graphs.tutor.state import TutorInput, TutorState

__all__ = ["CONSENT_KINDS", "STEP_LABELS", "build_tutor_graph"]

STEP_LABELS = {
    "analyze_message": "Reading your message",
    "answer_question": "Thinking about your question",
    "search_notes": "Searching your notes",
    "report_search_results": "Summarizing what I found",
    "draft_note_edit": "Drafting a note edit",
    "request_note_edit_consent": "Asking for your approval",
    "apply_note_edit": "Writing your note",
    "skip_note_edit": "Leaving your note unchanged",
    "draft_note_creation": "Drafting a new note",
    "request_note_create_consent": "Asking for your approval",
    "create_note": "Creating your note",
    "skip_note_creation": "Leaving your notes unchanged",
    "draft_note_review": "Reviewing your notes",
    "draft_note_deletion": "Preparing to delete your note",
    "request_note_delete_consent": "Asking for your approval",
    "delete_note": "Deleting your note",
    "keep_note": "Keeping your note",
    "report_no_open_note": "Looking for your note",
    "report_nothing_to_draft": "Checking what is new",
    "remember_preference": "Remembering this",
}

CONSENT_KINDS: dict[str, ConsentKind[Any, Any]] = {
    kind.name: kind for kind in (NOTE_EDIT, NOTE_CREATE, NOTE_DELETE)
}


def build_tutor_graph(
    model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any] | None = None
) -> CompiledStateGraph[TutorState, None, TutorInput, TutorState]:
    nodes = TutorNodes(model)
    builder = StateGraph(TutorState, input_schema=TutorInput)
    builder.add_node("analyze_message", nodes.analyze_message)
    builder.add_node("answer_question", nodes.answer_question)
    builder.add_node("search_notes", nodes.search_notes)
    builder.add_node("report_search_results", nodes.report_search_results)
    builder.add_node("draft_note_edit", nodes.draft_note_edit)
    builder.add_node("draft_note_creation", nodes.draft_note_creation)
    builder.add_node("draft_note_review", nodes.draft_note_review)
    builder.add_node("draft_note_deletion", nodes.draft_note_deletion)
    builder.add_node("report_no_open_note", report_no_open_note)
    builder.add_node("report_nothing_to_draft", report_nothing_to_draft)
    builder.add_node("request_note_edit_consent", consent_nodes.request_note_edit_consent)
    builder.add_node("apply_note_edit", consent_nodes.apply_note_edit)
    builder.add_node("skip_note_edit", consent_nodes.skip_note_edit)
    builder.add_node("request_note_create_consent", consent_nodes.request_note_create_consent)
    builder.add_node("create_note", consent_nodes.create_note)
    builder.add_node("skip_note_creation", consent_nodes.skip_note_creation)
    builder.add_node("request_note_delete_consent", consent_nodes.request_note_delete_consent)
    builder.add_node("delete_note", consent_nodes.delete_note)
    builder.add_node("keep_note", consent_nodes.keep_note)
    builder.add_node("remember_preference", remember_preference)

    builder.add_edge(START, "analyze_message")
    builder.add_conditional_edges("analyze_message", route_after_analyze_message)
    builder.add_edge("search_notes", "report_search_results")
    builder.add_conditional_edges("draft_note_edit", route_after_draft_note_edit)
    builder.add_conditional_edges(
        "request_note_edit_consent", route_after_request_note_edit_consent
    )
    builder.add_conditional_edges("draft_note_creation", route_after_draft_note_creation)
    builder.add_conditional_edges(
        "request_note_create_consent", route_after_request_note_create_consent
    )
    builder.add_conditional_edges("draft_note_review", route_after_draft_note_review)
    builder.add_conditional_edges("draft_note_deletion", route_after_draft_note_deletion)
    builder.add_conditional_edges(
        "request_note_delete_consent", route_after_request_note_delete_consent
    )
    for last in (
        "answer_question",
        "report_search_results",
        "report_no_open_note",
        "report_nothing_to_draft",
        "apply_note_edit",
        "skip_note_edit",
        "create_note",
        "skip_note_creation",
        "delete_note",
        "keep_note",
        "remember_preference",
    ):
        builder.add_edge(last, END)
    return builder.compile(checkpointer=checkpointer, name="tutor")
