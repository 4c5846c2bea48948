"""The tutor's nodes that read and draft: understand the message, answer, search, and draft the
proposal of a consent (an edit, a new note, a review, a deletion). None of them changes a note;
asking and acting live in ``consent_nodes``.
"""

from __future__ import annotations

import difflib
import logging
import re
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime
from pydantic import BaseModel, ValidationError

from consentry_graphs.models import json_mode
from consentry_graphs.models.offline import classify
from consentry_graphs.services import NoteHit, NoteSnapshot, graph_services
from consentry_graphs.tutor import prompts
from consentry_graphs.tutor.consents import NoteCreateProposal, NoteDeleteProposal, NoteEditProposal
from consentry_graphs.tutor.line_merge import removed_lines
from consentry_graphs.tutor.memories import memories_block, remembered
from consentry_graphs.tutor.passages import notes_block, review_block, search_excerpt
from consentry_graphs.tutor.replies import say, say_outcome
from consentry_graphs.tutor.reviews import notes_to_review, review_title
from consentry_graphs.tutor.state import Intent, TutorState
from consentry_graphs.tutor.summaries import as_summary_section, discussion, with_summary
from consentry_graphs.window import outside_window

__all__ = ["IntentChoice", "TutorNodes", "report_no_open_note", "report_nothing_to_draft"]

log = logging.getLogger(__name__)
NEW_NOTE_TITLE = "Summary of our discussion"
SEARCH_LIMIT = 5
GROUNDING_LIMIT = 3
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_INTERNAL: RunnableConfig = {"tags": [TAG_NOSTREAM]}


def _last_user_text(state: TutorState) -> str:
    for message in reversed(state.get("messages", [])):
        if isinstance(message, HumanMessage):
            return message.text
    return ""


class IntentChoice(BaseModel):
    """What the classify call must answer: one JSON object, validated before it routes."""

    intent: Intent
    query: str = ""


def _parse_intent(raw: str, fallback_message: str) -> dict[str, str]:
    """The model's JSON object, validated; an answer that is not one (prose, a code fence
    around it, an unknown intent) falls back to the offline model's keyword rules."""
    match = _JSON_OBJECT.search(raw)
    try:
        choice = IntentChoice.model_validate_json(match.group(0) if match else raw)
    except ValidationError:
        log.warning("the model's intent was not a valid JSON object; keyword rules route instead")
        return classify(fallback_message)
    return {"intent": choice.intent, "query": choice.query.strip() or fallback_message}


def _lines(text: str) -> list[str]:
    return [f"{line}\n" for line in text.splitlines()]


def _search_result(hit: NoteHit) -> str:
    if not hit.snippet:
        return f"- \u201c{hit.title}\u201d (no text yet)"
    return f"- In \u201c{hit.title}\u201d: {hit.snippet}"


def unified_diff(*, title: str, base: str, proposed: str, base_version: int) -> str:
    return "".join(
        difflib.unified_diff(
            _lines(base),
            _lines(proposed),
            fromfile=f"{title} (version {base_version})",
            tofile=f"{title} (proposed)",
        )
    )


async def _open_note(state: TutorState) -> NoteSnapshot | None:
    """The note the user has open, if there is one and it still exists."""
    note_id = state.get("note_id")
    return await graph_services().notes.get_note(note_id) if note_id else None


def report_no_open_note(state: TutorState) -> dict[str, Any]:
    """The user asked to change the open note, but none is open (or it was deleted meanwhile)."""
    if state.get("note_id"):
        text = "The note you had open no longer exists, so I changed nothing."
    else:
        text = "There is no note open to delete. Open the note you want to delete, then ask again."
    return {"messages": [say_outcome(text)]}


def report_nothing_to_draft(state: TutorState) -> dict[str, Any]:
    """A summary or a review was asked for, but there is none to propose: nothing is asked."""
    why = state.get("nothing_to_draft")
    if why == "nothing_discussed":
        text = (
            "We have not discussed anything yet in this conversation, so there is no summary to "
            "save. Ask me a question first."
        )
    elif why == "no_notes":
        text = "This project has no notes to review yet."
    else:
        text = "Your note already has everything we discussed: there is nothing to change."
    return {"messages": [say_outcome(text)], "nothing_to_draft": None}


class TutorNodes:
    """Node functions bound to one chat model."""

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model
        self.classifier = json_mode(model)

    async def analyze_message(self, state: TutorState) -> dict[str, Any]:
        """Route the new message, and let the oldest messages go past the conversation window."""
        text = _last_user_text(state)
        reply = await self.classifier.ainvoke(
            [SystemMessage(prompts.CLASSIFY), HumanMessage(text)], config=_INTERNAL
        )
        routed = _parse_intent(reply.text, text)
        return {
            "intent": routed["intent"],
            "query": routed["query"],
            "found_notes": [],
            "proposal": None,
            "decision": None,
            "nothing_to_draft": None,
            "drafted_summary": None,
            "messages": outside_window(
                state.get("messages", []), graph_services().conversation_window
            ),
        }

    async def answer_question(self, state: TutorState, runtime: Runtime[Any]) -> dict[str, Any]:
        """Answer from the notes the question finds, best first, and the open note (last, if
        the search did not find it), minding what the person asked to be remembered."""
        notes = graph_services().notes
        query = state.get("query") or _last_user_text(state)
        hits = await notes.search_notes(state["project_id"], query, limit=GROUNDING_LIMIT)
        note_ids = [hit.note_id for hit in hits]
        active_id = state.get("note_id")
        if active_id and active_id not in note_ids:
            note_ids.append(active_id)
        found = [note for note_id in note_ids if (note := await notes.get_note(note_id))]
        block = notes_block(found, query, open_note_id=active_id)
        memories = memories_block(await remembered(runtime))
        system = SystemMessage(prompts.ANSWER.format(notes=block, memories=memories))
        reply = await self.model.ainvoke([system, *state["messages"]])
        return {"messages": [reply]}

    async def search_notes(self, state: TutorState) -> dict[str, Any]:
        """Search the project; each hit shows the note's own sentences about the query."""
        notes = graph_services().notes
        query = state.get("query") or _last_user_text(state)
        found = []
        for hit in await notes.search_notes(state["project_id"], query, limit=SEARCH_LIMIT):
            note = await notes.get_note(hit.note_id)
            if note is not None:
                excerpt = search_excerpt(note, query)
                found.append(hit.model_copy(update={"snippet": excerpt}).model_dump())
        return {"found_notes": found}

    async def report_search_results(self, state: TutorState) -> dict[str, Any]:
        hits = [NoteHit.model_validate(hit) for hit in state.get("found_notes", [])]
        query = state.get("query", "")
        if not hits:
            text = f"I found no notes matching \u201c{query}\u201d in this project."
        else:
            plural = "s" if len(hits) != 1 else ""
            lines = [f"I found {len(hits)} note{plural} matching \u201c{query}\u201d:"]
            lines += [_search_result(hit) for hit in hits]
            text = "\n".join(lines)
        return {"messages": [say(text)]}

    async def _summary_section(self, state: TutorState) -> str | None:
        """A summary of the discussion (``summaries.discussion``), asked for by the request;
        None when nothing was discussed yet (no model call)."""
        discussed = discussion(state["messages"])
        if not discussed:
            return None
        request = HumanMessage(_last_user_text(state))
        reply = await self.model.ainvoke(
            [SystemMessage(prompts.SUMMARIZE), *discussed, request], config=_INTERNAL
        )
        return as_summary_section(reply.text)

    async def draft_note_edit(self, state: TutorState) -> dict[str, Any]:
        """Propose the open note with a summary of the discussion merged into its summary
        section, else added at its end (``summaries.with_summary``): nothing a person wrote is
        removed. Nothing is proposed when nothing was discussed or the note has it all."""
        note = await _open_note(state)
        if note is None:
            return {"proposal": None}
        section = await self._summary_section(state)
        if section is None:
            return {"proposal": None, "nothing_to_draft": "nothing_discussed"}
        base = note.content
        before = state.get("written_summaries", {}).get(note.note_id)
        proposed = with_summary(base, section, drafted_before=before)
        if proposed.strip() == base.strip():
            return {"proposal": None, "nothing_to_draft": "nothing_new"}
        _, person_lines = removed_lines(
            None if before is None else before.splitlines(),
            base.splitlines(),
            proposed.splitlines(),
        )
        proposal = NoteEditProposal(
            project_id=state["project_id"],
            note_id=note.note_id,
            title=note.title,
            base_version=note.version,
            base_content=base,
            proposed_content=proposed,
            diff=unified_diff(
                title=note.title, base=base, proposed=proposed, base_version=note.version
            ),
            person_lines_removed=person_lines,
        )
        said = say_outcome(f"I drafted an edit of your note \u201c{note.title}\u201d.")
        return {"proposal": proposal.model_dump(), "drafted_summary": section, "messages": [said]}

    async def draft_note_creation(self, state: TutorState) -> dict[str, Any]:
        """Propose saving a summary of the discussion as a new note (no note is open)."""
        section = await self._summary_section(state)
        if section is None:
            return {"proposal": None, "nothing_to_draft": "nothing_discussed"}
        proposal = NoteCreateProposal(
            project_id=state["project_id"], title=NEW_NOTE_TITLE, content=f"{section}\n"
        )
        said = say_outcome(f"I drafted a new note, \u201c{proposal.title}\u201d.")
        return {"proposal": proposal.model_dump(), "drafted_summary": section, "messages": [said]}

    async def draft_note_review(self, state: TutorState) -> dict[str, Any]:
        """Propose a review of the project's most recently changed notes as a new note
        (``reviews``); nothing is proposed for a project without notes (no model call)."""
        notes = await notes_to_review(state["project_id"])
        if not notes:
            return {"proposal": None, "nothing_to_draft": "no_notes"}
        system = SystemMessage(prompts.REVIEW.format(notes=review_block(notes)))
        request = HumanMessage(_last_user_text(state))
        reply = await self.model.ainvoke([system, request], config=_INTERNAL)
        proposal = NoteCreateProposal(
            project_id=state["project_id"],
            title=review_title(graph_services().clock()),
            content=f"{reply.text.strip()}\n",
        )
        plural = "s" if len(notes) != 1 else ""
        said = say_outcome(
            f"I drafted \u201c{proposal.title}\u201d, a review of {len(notes)} note{plural} "
            "of this project."
        )
        return {"proposal": proposal.model_dump(), "messages": [said]}

    async def draft_note_deletion(self, state: TutorState) -> dict[str, Any]:
        """Propose deleting the open note, as it is now."""
        note = await _open_note(state)
        if note is None:
            return {"proposal": None}
        proposal = NoteDeleteProposal(
            note_id=note.note_id, title=note.title, version=note.version, content=note.content
        )
        said = say_outcome(f"I will delete your note \u201c{note.title}\u201d once you confirm.")
        return {"proposal": proposal.model_dump(), "messages": [said]}
