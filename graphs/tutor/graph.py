"""The tutor graph: analyze → answer | search → report | draft → consent → apply | skip."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graphs.consent import ConsentKind
from graphs.services import GraphContext
from graphs.tutor.nodes import NOTE_EDIT, TutorNodes
from graphs.tutor.routing import route_after_analyze_message, route_after_request_note_edit_consent
from graphs.tutor.state import TutorInput, TutorState

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
}

CONSENT_KINDS: dict[str, ConsentKind[Any, Any]] = {NOTE_EDIT.name: NOTE_EDIT}


def build_tutor_graph(
    model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any] | None = None
) -> CompiledStateGraph[TutorState, GraphContext, TutorInput, TutorState]:
    nodes = TutorNodes(model)
    builder = StateGraph(TutorState, context_schema=GraphContext, input_schema=TutorInput)
    builder.add_node("analyze_message", nodes.analyze_message)
    builder.add_node("answer_question", nodes.answer_question)
    builder.add_node("search_notes", nodes.search_notes)
    builder.add_node("report_search_results", nodes.report_search_results)
    builder.add_node("draft_note_edit", nodes.draft_note_edit)
    builder.add_node("request_note_edit_consent", nodes.request_note_edit_consent)
    builder.add_node("apply_note_edit", nodes.apply_note_edit)
    builder.add_node("skip_note_edit", nodes.skip_note_edit)

    builder.add_edge(START, "analyze_message")
    builder.add_conditional_edges("analyze_message", route_after_analyze_message)
    builder.add_edge("answer_question", END)
    builder.add_edge("search_notes", "report_search_results")
    builder.add_edge("report_search_results", END)
    builder.add_edge("draft_note_edit", "request_note_edit_consent")
    builder.add_conditional_edges(
        "request_note_edit_consent", route_after_request_note_edit_consent
    )
    builder.add_edge("apply_note_edit", END)
    builder.add_edge("skip_note_edit", END)
    return builder.compile(checkpointer=checkpointer, name="tutor")
