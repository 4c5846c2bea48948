"""The tutor's nodes, one concern each.

``request_note_edit_consent`` only asks; ``apply_note_edit`` writes, keyed by the approval id, so a
re-run after a crash or a double resume never writes twice.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_stream_writer
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from graphs.consent import ConsentKind
from graphs.models.offline import classify
from graphs.services import GraphContext, NoteHit
from graphs.tutor import prompts
from graphs.tutor.state import NoteEditProposal, NoteEditRevision, TutorState

__all__ = ["NOTE_EDIT", "TutorNodes"]

NOTE_EDIT: ConsentKind[NoteEditProposal, NoteEditRevision] = ConsentKind(
    name="note_edit", proposal_model=NoteEditProposal, edit_model=NoteEditRevision
)
NEW_NOTE_TITLE = "Summary of our discussion"
SEARCH_LIMIT = 5
GROUNDING_LIMIT = 3
_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_INTERNAL: RunnableConfig = {"tags": [TAG_NOSTREAM]}


def _say(text: str) -> AIMessage:
    """An assistant message written by a node (not a model), with its id fixed up front."""
    return AIMessage(text, id=f"msg-{uuid4().hex}")


def _last_user_text(state: TutorState) -> str:
    for message in reversed(state.get("messages", [])):
        if isinstance(message, HumanMessage):
            return str(message.content)
    return ""


def _parse_intent(raw: str, fallback_message: str) -> dict[str, str]:
    match = _JSON_OBJECT.search(raw)
    try:
        parsed = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        parsed = {}
    if isinstance(parsed, dict) and parsed.get("intent") in ("answer", "search", "edit_note"):
        return {"intent": parsed["intent"], "query": str(parsed.get("query") or fallback_message)}
    return classify(fallback_message)


def _notes_block(hits: list[NoteHit]) -> str:
    return "".join(f"### {hit.title}\n{hit.snippet}\n" for hit in hits)


def _lines(text: str) -> list[str]:
    return [f"{line}\n" for line in text.splitlines()]


def unified_diff(*, title: str, base: str, proposed: str, base_version: int | None) -> str:
    return "".join(
        difflib.unified_diff(
            _lines(base),
            _lines(proposed),
            fromfile=f"{title} (version {base_version})" if base_version else "/dev/null",
            tofile=f"{title} (proposed)",
        )
    )


class TutorNodes:
    """Node functions bound to one chat model."""

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    async def analyze_message(self, state: TutorState) -> dict[str, Any]:
        text = _last_user_text(state)
        reply = await self.model.ainvoke(
            [SystemMessage(prompts.CLASSIFY), HumanMessage(text)], config=_INTERNAL
        )
        routed = _parse_intent(str(reply.content), text)
        return {
            "intent": routed["intent"],
            "query": routed["query"],
            "found_notes": [],
            "proposal": None,
            "decision": None,
        }

    async def answer_question(
        self, state: TutorState, runtime: Runtime[GraphContext]
    ) -> dict[str, Any]:
        notes = runtime.context.notes
        hits = await notes.search_notes(
            state["project_id"], state.get("query") or _last_user_text(state), limit=GROUNDING_LIMIT
        )
        active_id = state.get("note_id")
        if active_id and all(hit.note_id != active_id for hit in hits):
            active = await notes.get_note(active_id)
            if active is not None and active.content.strip():
                snippet = active.content[:1500]
                hits.insert(
                    0, NoteHit(note_id=active.note_id, title=active.title, snippet=snippet, score=0)
                )
        system = SystemMessage(prompts.ANSWER.format(notes=_notes_block(hits)))
        reply = await self.model.ainvoke([system, *state["messages"]])
        return {"messages": [reply]}

    async def search_notes(
        self, state: TutorState, runtime: Runtime[GraphContext]
    ) -> dict[str, Any]:
        query = state.get("query") or _last_user_text(state)
        hits = await runtime.context.notes.search_notes(
            state["project_id"], query, limit=SEARCH_LIMIT
        )
        return {"found_notes": [hit.model_dump() for hit in hits]}

    async def report_search_results(self, state: TutorState) -> dict[str, Any]:
        hits = [NoteHit.model_validate(hit) for hit in state.get("found_notes", [])]
        query = state.get("query", "")
        if not hits:
            text = f"I found no notes matching \u201c{query}\u201d in this project."
        else:
            plural = "s" if len(hits) != 1 else ""
            lines = [f"I found {len(hits)} note{plural} matching \u201c{query}\u201d:"]
            lines += [f"- **{hit.title}**: {hit.snippet}" for hit in hits]
            text = "\n".join(lines)
        return {"messages": [_say(text)]}

    async def draft_note_edit(
        self, state: TutorState, runtime: Runtime[GraphContext]
    ) -> dict[str, Any]:
        note_id = state.get("note_id")
        note = await runtime.context.notes.get_note(note_id) if note_id else None
        conversation: list[AnyMessage] = list(state["messages"])
        reply = await self.model.ainvoke(
            [SystemMessage(prompts.SUMMARIZE), *conversation], config=_INTERNAL
        )
        section = str(reply.content).strip()
        base = note.content if note else ""
        proposed = f"{base.rstrip()}\n\n{section}\n" if base.strip() else f"{section}\n"
        title = note.title if note else NEW_NOTE_TITLE
        base_version = note.version if note else None
        proposal = NoteEditProposal(
            project_id=state["project_id"],
            note_id=note.note_id if note else None,
            title=title,
            base_version=base_version,
            base_content=base,
            proposed_content=proposed,
            diff=unified_diff(title=title, base=base, proposed=proposed, base_version=base_version),
        )
        return {"proposal": proposal.model_dump()}

    async def request_note_edit_consent(self, state: TutorState) -> dict[str, Any]:
        proposal = NoteEditProposal.model_validate(state["proposal"])
        target = f"your note \u201c{proposal.title}\u201d" if proposal.note_id else "a new note"
        decision = NOTE_EDIT.ask(title=f"Add a summary to {target}?", proposal=proposal)
        return {"decision": decision.to_state()}

    async def apply_note_edit(
        self, state: TutorState, runtime: Runtime[GraphContext]
    ) -> dict[str, Any]:
        proposal = NoteEditProposal.model_validate(state["proposal"])
        decision = NOTE_EDIT.restore(state["decision"])
        content, title = proposal.proposed_content, proposal.title
        if decision.edit is not None:
            content = decision.edit.content or proposal.proposed_content
            title = decision.edit.title or proposal.title
        result = await runtime.context.notes.apply_note_edit(
            approval_id=decision.approval_id,
            project_id=proposal.project_id,
            note_id=proposal.note_id,
            title=title,
            content=content,
            base_version=proposal.base_version,
        )
        if result.outcome == "applied" and result.note is not None:
            get_stream_writer()({"event": "note", **result.note.model_dump()})
            verb = "saved your edit to" if decision.decision == "edit" else "updated"
            text = (
                f"Done: I {verb} \u201c{result.note.title}\u201d (version {result.note.version})."
            )
        elif result.outcome == "note_changed":
            text = (
                f"Nothing was written: \u201c{proposal.title}\u201d changed since I drafted this "
                f"edit (version {proposal.base_version} \u2192 {result.current_version}). "
                "Ask me again to draft it on the current version."
            )
        else:
            text = f"Nothing was written: \u201c{proposal.title}\u201d no longer exists."
        return {"messages": [_say(text)], "proposal": None}

    async def skip_note_edit(self, state: TutorState) -> dict[str, Any]:
        decision = NOTE_EDIT.restore(state["decision"])
        if decision.decision == "expire":
            text = "Nobody decided on my proposed edit in time, so I left your notes unchanged."
            return {"messages": [_say(text)], "proposal": None}
        text = "OK, I left your notes unchanged."
        if decision.comment:
            text += f" You said: \u201c{decision.comment}\u201d."
        return {"messages": [_say(text)], "proposal": None}
