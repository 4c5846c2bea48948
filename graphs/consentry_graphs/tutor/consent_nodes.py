"""The tutor's nodes that ask and act, three per consent kind: ``request_*_consent`` only asks
(LangGraph re-runs it from its first line on resume); the effect node (``apply_note_edit``,
``create_note``, ``delete_note``) changes the note once per approval id, so a re-run after a crash
or a double resume never writes twice; the other node says why nothing changed (rejected, or
expired before anyone decided).
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer

from consentry_graphs.consent import TypedDecision
from consentry_graphs.services import NoteSnapshot, graph_services
from consentry_graphs.tutor.consents import (
    NOTE_CREATE,
    NOTE_DELETE,
    NOTE_EDIT,
    NoteCreateProposal,
    NoteDeleteProposal,
    NoteEditProposal,
)
from consentry_graphs.tutor.replies import say_outcome
from consentry_graphs.tutor.state import TutorState
from consentry_graphs.tutor.summaries import has_summary

__all__ = [
    "apply_note_edit",
    "create_note",
    "delete_note",
    "keep_note",
    "request_note_create_consent",
    "request_note_delete_consent",
    "request_note_edit_consent",
    "skip_note_creation",
    "skip_note_edit",
]


def _send_note(note: NoteSnapshot) -> None:
    """Tell the client the note's new version (a ``note`` event)."""
    get_stream_writer()({"event": "note", **note.model_dump()})


def _remember_summary(state: TutorState, note_id: str) -> dict[str, Any]:
    """The summary just written into the note, as the model drafted it: the tutor's own words
    there, which its next summary may rewrite (``summaries.with_summary``)."""
    drafted = state.get("drafted_summary")
    if drafted is None:
        return {}
    return {"written_summaries": {**state.get("written_summaries", {}), note_id: drafted}}


def _with_comment(text: str, decision: TypedDecision[Any]) -> str:
    return f"{text} You said: \u201c{decision.comment}\u201d." if decision.comment else text


# note_edit: write a summary into the open note (its summary section, or a new one at its end)


async def request_note_edit_consent(state: TutorState) -> dict[str, Any]:
    proposal = NoteEditProposal.model_validate(state["proposal"])
    verb = "Update the summary in" if has_summary(proposal.base_content) else "Add a summary to"
    decision = NOTE_EDIT.ask(
        title=f"{verb} your note \u201c{proposal.title}\u201d?", proposal=proposal
    )
    return {"decision": decision.to_state()}


async def apply_note_edit(state: TutorState) -> dict[str, Any]:
    proposal = NoteEditProposal.model_validate(state["proposal"])
    decision = NOTE_EDIT.restore(state["decision"])
    content, title = proposal.proposed_content, proposal.title
    if decision.edit is not None:
        content = decision.edit.content or proposal.proposed_content
        title = decision.edit.title or proposal.title
    result = await graph_services().notes.apply_note_edit(
        approval_id=decision.approval_id,
        note_id=proposal.note_id,
        title=title,
        content=content,
        base_version=proposal.base_version,
    )
    written: dict[str, Any] = {}
    if result.outcome == "applied" and result.note is not None:
        _send_note(result.note)
        verb = "saved your edit to" if decision.decision == "edit" else "updated"
        text = f"Done: I {verb} \u201c{result.note.title}\u201d (version {result.note.version})."
        written = _remember_summary(state, result.note.note_id)
    elif result.outcome == "note_changed":
        text = (
            f"Nothing was written: \u201c{proposal.title}\u201d changed since I drafted this "
            f"edit (version {proposal.base_version} \u2192 {result.current_version}). "
            "Ask me again to draft it on the current version."
        )
    else:
        text = f"Nothing was written: \u201c{proposal.title}\u201d no longer exists."
    return {"messages": [say_outcome(text)], "proposal": None, **written}


async def skip_note_edit(state: TutorState) -> dict[str, Any]:
    decision = NOTE_EDIT.restore(state["decision"])
    if decision.decision == "expire":
        text = "Nobody decided on my proposed edit in time, so I left your notes unchanged."
    else:
        text = _with_comment("OK, I left your notes unchanged.", decision)
    return {"messages": [say_outcome(text)], "proposal": None}


# note_create: save a summary as a new note


async def request_note_create_consent(state: TutorState) -> dict[str, Any]:
    proposal = NoteCreateProposal.model_validate(state["proposal"])
    decision = NOTE_CREATE.ask(
        title=f"Save a summary as a new note \u201c{proposal.title}\u201d?", proposal=proposal
    )
    return {"decision": decision.to_state()}


async def create_note(state: TutorState) -> dict[str, Any]:
    proposal = NoteCreateProposal.model_validate(state["proposal"])
    decision = NOTE_CREATE.restore(state["decision"])
    content, title = proposal.content, proposal.title
    if decision.edit is not None:
        content = decision.edit.content or proposal.content
        title = decision.edit.title or proposal.title
    result = await graph_services().notes.apply_note_creation(
        approval_id=decision.approval_id,
        project_id=proposal.project_id,
        title=title,
        content=content,
    )
    if result.note is None:
        return {"messages": [say_outcome("Nothing was created.")], "proposal": None}
    _send_note(result.note)
    verb = "saved your version as" if decision.decision == "edit" else "created"
    text = f"Done: I {verb} the new note \u201c{result.note.title}\u201d."
    written = _remember_summary(state, result.note.note_id)
    return {"messages": [say_outcome(text)], "proposal": None, **written}


async def skip_note_creation(state: TutorState) -> dict[str, Any]:
    proposal = NoteCreateProposal.model_validate(state["proposal"])
    decision = NOTE_CREATE.restore(state["decision"])
    if decision.decision == "expire":
        text = (
            f"The request to create \u201c{proposal.title}\u201d expired before anyone decided, "
            "so I created nothing."
        )
    else:
        text = _with_comment("OK, I created no note.", decision)
    return {"messages": [say_outcome(text)], "proposal": None}


# note_delete: delete the open note (always asks a person)


async def request_note_delete_consent(state: TutorState) -> dict[str, Any]:
    proposal = NoteDeleteProposal.model_validate(state["proposal"])
    decision = NOTE_DELETE.ask(
        title=f"Delete your note \u201c{proposal.title}\u201d?", proposal=proposal
    )
    return {"decision": decision.to_state()}


async def delete_note(state: TutorState) -> dict[str, Any]:
    proposal = NoteDeleteProposal.model_validate(state["proposal"])
    decision = NOTE_DELETE.restore(state["decision"])
    result = await graph_services().notes.apply_note_deletion(
        approval_id=decision.approval_id, note_id=proposal.note_id, version=proposal.version
    )
    if result.outcome == "deleted":
        text = f"Done: I deleted \u201c{proposal.title}\u201d."
        return {"messages": [say_outcome(text)], "proposal": None, "note_id": None}
    if result.outcome == "note_changed":
        text = (
            f"Nothing was deleted: \u201c{proposal.title}\u201d changed since I asked "
            f"(version {proposal.version} \u2192 {result.current_version}). "
            "Ask me again if you still want to delete it."
        )
    else:
        text = f"Nothing was deleted: \u201c{proposal.title}\u201d no longer exists."
    return {"messages": [say_outcome(text)], "proposal": None}


async def keep_note(state: TutorState) -> dict[str, Any]:
    proposal = NoteDeleteProposal.model_validate(state["proposal"])
    decision = NOTE_DELETE.restore(state["decision"])
    if decision.decision == "expire":
        text = (
            f"The request to delete \u201c{proposal.title}\u201d expired before anyone decided, "
            "so I kept the note."
        )
    else:
        text = _with_comment(f"OK, I kept your note \u201c{proposal.title}\u201d.", decision)
    return {"messages": [say_outcome(text)], "proposal": None}
