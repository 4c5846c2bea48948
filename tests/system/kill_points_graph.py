"""A note-editing graph that can stop at labelled points, so a system test can SIGKILL the server
exactly there (``tests/system/test_kill_points.py``).

    draft_note_edit → request_note_edit_consent → apply_note_edit | skip_note_edit → END
                    → END (no open note)

``aside`` is the same graph with one more node, ``look_aside``, that runs beside the consent node
(both start after ``draft_note_edit``): its kill point ``BESIDE_THE_CONSENT`` holds the run after
the consent node's interrupt is in the checkpoint and before the run could record the consent.

The server loads them with ``CONSENTRY_GRAPHS=points=tests.system.kill_points_graph:graph_spec``
(and ``aside=tests.system.kill_points_graph:aside_graph_spec``).
It asks with the tutor's ``note_edit`` consent kind and writes through the server's notes store,
which applies an edit once per approval id.

A kill point is ``await reach(label)``. With ``KILL_POINTS_DIR`` set and
``$KILL_POINTS_DIR/stop-at`` holding ``label``, the node writes ``$KILL_POINTS_DIR/reached-<label>``
and then waits forever, so the test (another process) sees the file and kills the server while
the node is still running: its checkpoint is never written.
"""

from __future__ import annotations

import asyncio
import difflib
import os
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

from consentry_graphs.registry import GraphSpec
from consentry_graphs.services import graph_services
from consentry_graphs.tutor.consents import NOTE_EDIT, NoteEditProposal

__all__ = [
    "AFTER_THE_WRITE",
    "BEFORE_THE_WRITE",
    "BESIDE_THE_CONSENT",
    "DECISION_RECORDED",
    "KILL_POINTS_DIR",
    "aside_graph_spec",
    "build_aside_graph",
    "build_points_graph",
    "graph_spec",
    "reach",
]

KILL_POINTS_DIR = "KILL_POINTS_DIR"
"""The environment variable naming the folder the test and the server share."""

DECISION_RECORDED = "decision-recorded"
"""In the consent node, right after ``ask()`` returned a decision: the resume has not run yet."""
BEFORE_THE_WRITE = "before-the-write"
"""In the effect node, before the note is written."""
AFTER_THE_WRITE = "after-the-write"
"""In the effect node, after the note was written, before the node returns."""
BESIDE_THE_CONSENT = "beside-the-consent"
"""In ``look_aside`` (graph ``aside``), while the consent node beside it interrupts."""


def _stops_here(label: str) -> bool:
    """Whether the test asked to stop at ``label``; if so, tell it the point is reached."""
    folder = os.environ.get(KILL_POINTS_DIR)
    if not folder:
        return False
    stop_at = Path(folder) / "stop-at"
    if not stop_at.is_file() or stop_at.read_text().strip() != label:
        return False
    (Path(folder) / f"reached-{label}").write_text(label)
    return True


async def reach(label: str) -> None:
    """A kill point: wait forever here if the test asked to stop at ``label``."""
    if await asyncio.to_thread(_stops_here, label):
        await asyncio.Event().wait()


class PointsState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]  # the server sends the user's message
    project_id: str
    note_id: str | None
    proposal: dict[str, Any] | None
    decision: dict[str, Any] | None


def _say(text: str) -> AIMessage:
    return AIMessage(text, id=f"msg-{uuid4().hex}")


def _diff(*, title: str, base: str, proposed: str, base_version: int) -> str:
    return "".join(
        difflib.unified_diff(
            base.splitlines(keepends=True),
            proposed.splitlines(keepends=True),
            fromfile=f"{title} (version {base_version})",
            tofile=f"{title} (proposed)",
        )
    )


async def draft_note_edit(state: PointsState) -> dict[str, Any]:
    """Propose the open note with the user's message appended as one line."""
    note_id = state.get("note_id")
    note = await graph_services().notes.get_note(note_id) if note_id else None
    if note is None:
        return {"proposal": None, "messages": [_say("Open a note first.")]}
    line = next(
        (m.text for m in reversed(state["messages"]) if isinstance(m, HumanMessage)), ""
    ).strip()
    base = note.content
    proposed = f"{base.rstrip()}\n{line}\n" if base.strip() else f"{line}\n"
    proposal = NoteEditProposal(
        project_id=note.project_id,
        note_id=note.note_id,
        title=note.title,
        base_version=note.version,
        base_content=base,
        proposed_content=proposed,
        diff=_diff(title=note.title, base=base, proposed=proposed, base_version=note.version),
    )
    return {"proposal": proposal.model_dump(), "decision": None}


def route_after_draft_note_edit(
    state: PointsState,
) -> Literal["request_note_edit_consent", "__end__"]:
    return "request_note_edit_consent" if state.get("proposal") else "__end__"


async def request_note_edit_consent(state: PointsState) -> dict[str, Any]:
    # Runs again from here when the decision arrives: everything before ask() is pure and cheap.
    proposal = NoteEditProposal.model_validate(state["proposal"])
    decision = NOTE_EDIT.ask(
        title=f"Add a line to \u201c{proposal.title}\u201d?", proposal=proposal
    )
    await reach(DECISION_RECORDED)
    return {"decision": decision.to_state()}


def route_after_request_note_edit_consent(
    state: PointsState,
) -> Literal["apply_note_edit", "skip_note_edit"]:
    return "apply_note_edit" if NOTE_EDIT.restore(state["decision"]).approved else "skip_note_edit"


async def apply_note_edit(state: PointsState) -> dict[str, Any]:
    proposal = NoteEditProposal.model_validate(state["proposal"])
    decision = NOTE_EDIT.restore(state["decision"])
    content, title = proposal.proposed_content, proposal.title
    if decision.edit is not None:
        content = decision.edit.content or content
        title = decision.edit.title or title
    await reach(BEFORE_THE_WRITE)
    result = await graph_services().notes.apply_note_edit(
        approval_id=decision.approval_id,
        note_id=proposal.note_id,
        title=title,
        content=content,
        base_version=proposal.base_version,
    )
    await reach(AFTER_THE_WRITE)
    if result.outcome == "applied" and result.note is not None:
        get_stream_writer()({"event": "note", **result.note.model_dump()})
        text = f"Added the line to \u201c{result.note.title}\u201d (version {result.note.version})."
    else:
        text = f"Nothing was written ({result.outcome})."
    return {"messages": [_say(text)], "proposal": None}


async def skip_note_edit(state: PointsState) -> dict[str, Any]:
    return {"messages": [_say("OK, I left the note unchanged.")], "proposal": None}


async def look_aside(state: PointsState) -> dict[str, Any]:
    """Runs beside the consent node and changes nothing (graph ``aside``)."""
    await reach(BESIDE_THE_CONSENT)
    return {}


def route_after_draft_note_edit_aside(
    state: PointsState,
) -> list[Literal["request_note_edit_consent", "look_aside"]] | Literal["__end__"]:
    return ["request_note_edit_consent", "look_aside"] if state.get("proposal") else "__end__"


STEP_LABELS = {
    "draft_note_edit": "Drafting a note edit",
    "request_note_edit_consent": "Asking for your approval",
    "look_aside": "Looking aside",
    "apply_note_edit": "Writing your note",
    "skip_note_edit": "Leaving your note unchanged",
}


def _build(
    checkpointer: BaseCheckpointSaver[Any] | None, *, aside: bool
) -> CompiledStateGraph[PointsState, None, PointsState, PointsState]:
    builder = StateGraph(PointsState)
    builder.add_node("draft_note_edit", draft_note_edit)
    builder.add_node("request_note_edit_consent", request_note_edit_consent)
    builder.add_node("apply_note_edit", apply_note_edit)
    builder.add_node("skip_note_edit", skip_note_edit)
    builder.add_edge(START, "draft_note_edit")
    if aside:
        builder.add_node("look_aside", look_aside)
        builder.add_conditional_edges("draft_note_edit", route_after_draft_note_edit_aside)
        builder.add_edge("look_aside", END)
    else:
        builder.add_conditional_edges("draft_note_edit", route_after_draft_note_edit)
    builder.add_conditional_edges(
        "request_note_edit_consent", route_after_request_note_edit_consent
    )
    builder.add_edge("apply_note_edit", END)
    builder.add_edge("skip_note_edit", END)
    return builder.compile(checkpointer=checkpointer, name="aside" if aside else "points")


def build_points_graph(
    model: BaseChatModel | None = None, checkpointer: BaseCheckpointSaver[Any] | None = None
) -> CompiledStateGraph[PointsState, None, PointsState, PointsState]:
    """The server passes its chat model to every graph; this one needs none."""
    return _build(checkpointer, aside=False)


def build_aside_graph(
    model: BaseChatModel | None = None, checkpointer: BaseCheckpointSaver[Any] | None = None
) -> CompiledStateGraph[PointsState, None, PointsState, PointsState]:
    return _build(checkpointer, aside=True)


def graph_spec() -> GraphSpec:
    """What ``CONSENTRY_GRAPHS=points=tests.system.kill_points_graph:graph_spec`` loads."""
    return GraphSpec(
        name="points",
        build=build_points_graph,
        step_labels=STEP_LABELS,
        consent_kinds={NOTE_EDIT.name: NOTE_EDIT},
    )


def aside_graph_spec() -> GraphSpec:
    """What ``CONSENTRY_GRAPHS=aside=tests.system.kill_points_graph:aside_graph_spec`` loads."""
    return GraphSpec(
        name="aside",
        build=build_aside_graph,
        step_labels=STEP_LABELS,
        consent_kinds={NOTE_EDIT.name: NOTE_EDIT},
    )
