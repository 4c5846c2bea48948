"""The tutor graph runs on its own: plain LangGraph, an in-memory checkpointer, the offline model
and a notes store written here. Consent only asks; the write happens after approval, once."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graphs.consent import ConsentDecision, ConsentRequest, Decision
from graphs.models.offline import OfflineChatModel
from graphs.services import AppliedEdit, GraphContext, NoteHit, NoteSnapshot
from graphs.tutor.graph import build_tutor_graph

PROJECT = "project-1"
NOTE = NoteSnapshot(
    note_id="note-1",
    project_id=PROJECT,
    title="RAG",
    content="Retrieval-augmented generation uses documents.",
    version=1,
)
ASK_FOR_SUMMARY = "Add a summary of our discussion to my note"
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class ApplyCall:
    approval_id: str
    project_id: str
    note_id: str | None
    title: str
    content: str
    base_version: int | None


@dataclass
class InMemoryNotesStore:
    """A NotesStore for one owner, in memory; applies each approval at most once."""

    notes: dict[str, NoteSnapshot] = field(default_factory=dict)
    apply_calls: list[ApplyCall] = field(default_factory=list)
    applied: dict[str, AppliedEdit] = field(default_factory=dict)
    writes: int = 0

    async def get_note(self, note_id: str) -> NoteSnapshot | None:
        return self.notes.get(note_id)

    async def search_notes(self, project_id: str, query: str, *, limit: int) -> list[NoteHit]:
        words = set(_WORD.findall(query.lower()))
        return [
            NoteHit(note_id=note.note_id, title=note.title, snippet=note.content, score=1.0)
            for note in self.notes.values()
            if note.project_id == project_id and words & set(_WORD.findall(note.content.lower()))
        ][:limit]

    async def apply_note_edit(
        self,
        *,
        approval_id: str,
        project_id: str,
        note_id: str | None,
        title: str,
        content: str,
        base_version: int | None,
    ) -> AppliedEdit:
        self.apply_calls.append(
            ApplyCall(approval_id, project_id, note_id, title, content, base_version)
        )
        if approval_id in self.applied:
            return self.applied[approval_id]
        current = self.notes.get(note_id) if note_id else None
        if note_id is not None and current is None:
            outcome = AppliedEdit(outcome="note_missing")
        elif current is not None and current.version != base_version:
            outcome = AppliedEdit(outcome="note_changed", current_version=current.version)
        else:
            written = NoteSnapshot(
                note_id=note_id or f"note-{len(self.notes) + 1}",
                project_id=project_id,
                title=title,
                content=content,
                version=(current.version + 1) if current else 1,
            )
            self.notes[written.note_id] = written
            self.writes += 1
            outcome = AppliedEdit(outcome="applied", note=written)
        self.applied[approval_id] = outcome
        return outcome


class InMemoryEffectLedger:
    """graphs.consent.EffectLedger over a dict (the tutor's note effects use the notes store)."""

    def __init__(self) -> None:
        self.results: dict[str, dict[str, Any]] = {}

    async def recall(self, approval_id: str) -> dict[str, Any] | None:
        return self.results.get(approval_id)

    async def remember(self, approval_id: str, kind: str, result: dict[str, Any]) -> None:
        self.results[approval_id] = result


@dataclass
class Tutor:
    """One thread of the tutor graph with its store."""

    store: InMemoryNotesStore
    graph: Any
    config: RunnableConfig

    @property
    def context(self) -> GraphContext:
        return GraphContext(notes=self.store, effects=InMemoryEffectLedger(), user="test/alice")

    async def say(self, text: str, *, note_id: str | None = NOTE.note_id) -> dict[str, Any]:
        graph_input = {
            "messages": [HumanMessage(text, id=f"msg-{uuid4().hex}")],
            "project_id": PROJECT,
            "note_id": note_id,
        }
        result: dict[str, Any] = await self.graph.ainvoke(
            graph_input, self.config, context=self.context
        )
        return result

    async def decide(self, interrupt_id: str, decision: Decision, **extra: Any) -> dict[str, Any]:
        answer = ConsentDecision(
            approval_id=interrupt_id, decision=decision, decided_by="test/alice", **extra
        )
        result: dict[str, Any] = await self.graph.ainvoke(
            Command(resume={interrupt_id: answer.model_dump()}), self.config, context=self.context
        )
        return result

    async def pending(self) -> tuple[str, ConsentRequest]:
        state = await self.graph.aget_state(self.config)
        assert len(state.interrupts) == 1
        interrupt = state.interrupts[0]
        return interrupt.id, ConsentRequest.model_validate(interrupt.value)


@pytest.fixture
def tutor() -> Tutor:
    store = InMemoryNotesStore(notes={NOTE.note_id: NOTE})
    graph = build_tutor_graph(OfflineChatModel(), InMemorySaver())
    return Tutor(store, graph, {"configurable": {"thread_id": "thread-1"}})


def _last_text(result: dict[str, Any]) -> str:
    last = result["messages"][-1]
    assert isinstance(last, AIMessage)
    return str(last.content)


async def _consent_after_a_question(tutor: Tutor) -> tuple[str, ConsentRequest]:
    await tutor.say("What is retrieval?")
    result = await tutor.say(ASK_FOR_SUMMARY)
    assert "__interrupt__" in result
    return await tutor.pending()


async def test_a_question_is_answered_from_the_stores_notes(tutor: Tutor) -> None:
    result = await tutor.say("What is retrieval?", note_id=None)

    text = _last_text(result)
    assert "offline model" in text
    assert "- **RAG**: Retrieval-augmented generation uses documents." in text
    assert (await tutor.graph.aget_state(tutor.config)).interrupts == ()
    assert tutor.store.apply_calls == []


async def test_a_search_request_reports_the_stores_hits(tutor: Tutor) -> None:
    result = await tutor.say("search my notes for documents.")

    assert _last_text(result) == (
        "I found 1 note matching \u201cdocuments\u201d:\n"
        "- **RAG**: Retrieval-augmented generation uses documents."
    )


async def test_an_edit_request_interrupts_with_a_note_edit_consent_and_writes_nothing(
    tutor: Tutor,
) -> None:
    interrupt_id, request = await _consent_after_a_question(tutor)

    assert request.kind == "note_edit"
    assert request.title == "Add a summary to your note \u201cRAG\u201d?"
    assert request.allowed_decisions == ["approve", "edit", "reject"]
    assert request.ttl_seconds is None
    proposal = request.proposal
    assert (proposal["project_id"], proposal["note_id"], proposal["title"]) == (
        PROJECT,
        NOTE.note_id,
        "RAG",
    )
    assert (proposal["base_version"], proposal["base_content"]) == (1, NOTE.content)
    assert proposal["proposed_content"].startswith(NOTE.content + "\n\n## Summary of our")
    assert "- **Question:** What is retrieval?" in proposal["proposed_content"]
    assert ASK_FOR_SUMMARY not in proposal["proposed_content"]
    assert "+## Summary of our discussion\n" in proposal["diff"]
    assert interrupt_id
    state = await tutor.graph.aget_state(tutor.config)
    assert state.next == ("request_note_edit_consent",)
    assert tutor.store.apply_calls == []
    assert tutor.store.notes[NOTE.note_id] == NOTE


async def test_an_edit_request_without_a_note_proposes_a_new_one(tutor: Tutor) -> None:
    await tutor.say(ASK_FOR_SUMMARY, note_id=None)

    _, request = await tutor.pending()

    assert request.title == "Add a summary to a new note?"
    assert (request.proposal["note_id"], request.proposal["base_version"]) == (None, None)
    assert request.proposal["title"] == "Summary of our discussion"
    assert request.proposal["base_content"] == ""


async def test_approve_applies_the_proposed_content_exactly_once(tutor: Tutor) -> None:
    interrupt_id, request = await _consent_after_a_question(tutor)

    result = await tutor.decide(interrupt_id, "approve")

    assert tutor.store.apply_calls == [
        ApplyCall(
            approval_id=interrupt_id,
            project_id=PROJECT,
            note_id=NOTE.note_id,
            title="RAG",
            content=request.proposal["proposed_content"],
            base_version=1,
        )
    ]
    written = tutor.store.notes[NOTE.note_id]
    assert (written.version, written.content) == (2, request.proposal["proposed_content"])
    assert _last_text(result) == "Done: I updated \u201cRAG\u201d (version 2)."
    state = await tutor.graph.aget_state(tutor.config)
    assert (state.next, state.interrupts, state.values["proposal"]) == ((), (), None)


async def test_edit_applies_the_persons_version_instead(tutor: Tutor) -> None:
    interrupt_id, _ = await _consent_after_a_question(tutor)
    mine = "My own summary."

    result = await tutor.decide(
        interrupt_id, "edit", edited={"content": mine, "title": "RAG notes"}
    )

    assert [(c.content, c.title) for c in tutor.store.apply_calls] == [(mine, "RAG notes")]
    assert _last_text(result) == "Done: I saved your edit to \u201cRAG notes\u201d (version 2)."


async def test_reject_never_applies_anything(tutor: Tutor) -> None:
    interrupt_id, _ = await _consent_after_a_question(tutor)

    result = await tutor.decide(interrupt_id, "reject", comment="not now")

    assert tutor.store.apply_calls == []
    assert tutor.store.notes[NOTE.note_id] == NOTE
    assert _last_text(result) == "OK, I left your notes unchanged. You said: \u201cnot now\u201d."


async def test_a_rerun_of_the_apply_step_passes_the_same_approval_id_and_writes_once(
    tutor: Tutor,
) -> None:
    interrupt_id, request = await _consent_after_a_question(tutor)
    await tutor.decide(interrupt_id, "approve")
    history = [snapshot async for snapshot in tutor.graph.aget_state_history(tutor.config)]
    before_apply = next(s for s in history if s.next == ("apply_note_edit",))

    replayed = await tutor.graph.ainvoke(None, before_apply.config, context=tutor.context)

    assert len(tutor.store.apply_calls) == 2
    assert tutor.store.apply_calls[0] == tutor.store.apply_calls[1]
    assert tutor.store.apply_calls[1].approval_id == interrupt_id
    assert tutor.store.writes == 1
    assert tutor.store.notes[NOTE.note_id].version == 2
    assert _last_text(replayed) == "Done: I updated \u201cRAG\u201d (version 2)."
    assert tutor.store.notes[NOTE.note_id].content == request.proposal["proposed_content"]


async def test_a_note_changed_since_the_draft_is_not_overwritten(tutor: Tutor) -> None:
    interrupt_id, _ = await _consent_after_a_question(tutor)
    changed = NOTE.model_copy(update={"content": "Rewritten meanwhile.", "version": 2})
    tutor.store.notes[NOTE.note_id] = changed

    result = await tutor.decide(interrupt_id, "approve")

    assert tutor.store.writes == 0
    assert tutor.store.notes[NOTE.note_id] == changed
    assert _last_text(result) == (
        "Nothing was written: \u201cRAG\u201d changed since I drafted this edit "
        "(version 1 \u2192 2). Ask me again to draft it on the current version."
    )
