"""Running the tutor graph alone in tests: plain LangGraph, an in-memory checkpointer, the offline
model and a notes store written here, which applies each approval at most once."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graphs.consent import ConsentDecision, ConsentRequest, InMemoryEffectLedger, Outcome
from graphs.models.offline import OfflineChatModel
from graphs.services import AppliedDeletion, AppliedEdit, GraphContext, NoteHit, NoteSnapshot
from graphs.tutor.graph import build_tutor_graph

PROJECT = "project-1"
NOTE = NoteSnapshot(
    note_id="note-1",
    project_id=PROJECT,
    title="RAG",
    content="Retrieval-augmented generation uses documents.",
    version=1,
)
INTERRUPTED = "__interrupt__"
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class EffectCall:
    """One call of an effect method of the store, with its arguments."""

    method: str
    approval_id: str
    args: dict[str, Any]


@dataclass
class InMemoryNotesStore:
    """A NotesStore for one owner, in memory; applies each approval at most once."""

    notes: dict[str, NoteSnapshot] = field(default_factory=dict)
    calls: list[EffectCall] = field(default_factory=list)
    outcomes: dict[str, AppliedEdit | AppliedDeletion] = field(default_factory=dict)
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

    def _recorded(self, method: str, approval_id: str, **args: Any) -> Any:
        self.calls.append(EffectCall(method, approval_id, args))
        return self.outcomes.get(approval_id)

    async def apply_note_edit(
        self, *, approval_id: str, note_id: str, title: str, content: str, base_version: int
    ) -> AppliedEdit:
        recorded = self._recorded(
            "apply_note_edit",
            approval_id,
            note_id=note_id,
            title=title,
            content=content,
            base_version=base_version,
        )
        if recorded is not None:
            return recorded
        current = self.notes.get(note_id)
        if current is None:
            outcome = AppliedEdit(outcome="note_missing")
        elif current.version != base_version:
            outcome = AppliedEdit(outcome="note_changed", current_version=current.version)
        else:
            written = current.model_copy(
                update={"title": title, "content": content, "version": current.version + 1}
            )
            outcome = self._write(written)
        self.outcomes[approval_id] = outcome
        return outcome

    async def apply_note_creation(
        self, *, approval_id: str, project_id: str, title: str, content: str
    ) -> AppliedEdit:
        recorded = self._recorded(
            "apply_note_creation", approval_id, project_id=project_id, title=title, content=content
        )
        if recorded is not None:
            return recorded
        created = NoteSnapshot(
            note_id=f"note-{len(self.notes) + 1}",
            project_id=project_id,
            title=title,
            content=content,
            version=1,
        )
        outcome = self._write(created)
        self.outcomes[approval_id] = outcome
        return outcome

    async def apply_note_deletion(
        self, *, approval_id: str, note_id: str, version: int
    ) -> AppliedDeletion:
        recorded = self._recorded(
            "apply_note_deletion", approval_id, note_id=note_id, version=version
        )
        if recorded is not None:
            return recorded
        current = self.notes.get(note_id)
        if current is None:
            deletion = AppliedDeletion(outcome="note_missing", note_id=note_id)
        elif current.version != version:
            deletion = AppliedDeletion(
                outcome="note_changed", note_id=note_id, current_version=current.version
            )
        else:
            del self.notes[note_id]
            self.writes += 1
            deletion = AppliedDeletion(outcome="deleted", note_id=note_id)
        self.outcomes[approval_id] = deletion
        return deletion

    def _write(self, note: NoteSnapshot) -> AppliedEdit:
        self.notes[note.note_id] = note
        self.writes += 1
        return AppliedEdit(outcome="applied", note=note)


@dataclass(frozen=True)
class Turn:
    """One run of the graph: the nodes that started, in order (as the server's ``step`` events;
    ``__interrupt__`` where it stopped to ask), the ``note`` events they sent, and the state
    afterwards."""

    nodes: list[str]
    notes_sent: list[dict[str, Any]]
    values: dict[str, Any]

    @property
    def reply(self) -> str:
        last = self.values["messages"][-1]
        assert isinstance(last, AIMessage), "the run ended without an assistant message"
        return str(last.content)


@dataclass
class Tutor:
    """One thread of the tutor graph with its store."""

    store: InMemoryNotesStore
    graph: Any
    config: RunnableConfig

    @classmethod
    def with_notes(cls, *notes: NoteSnapshot, model: BaseChatModel | None = None) -> Tutor:
        store = InMemoryNotesStore(notes={note.note_id: note for note in notes})
        graph = build_tutor_graph(model or OfflineChatModel(), InMemorySaver())
        return cls(store, graph, {"configurable": {"thread_id": "thread-1"}})

    @property
    def context(self) -> GraphContext:
        return GraphContext(notes=self.store, effects=InMemoryEffectLedger(), user="test/alice")

    async def run(self, graph_input: Any, config: RunnableConfig | None = None) -> Turn:
        nodes: list[str] = []
        notes_sent: list[dict[str, Any]] = []
        async for mode, chunk in self.graph.astream(
            graph_input,
            config or self.config,
            context=self.context,
            stream_mode=["tasks", "updates", "custom"],
        ):
            if mode == "tasks" and "input" in chunk:
                nodes.append(chunk["name"])
            elif mode == "updates" and INTERRUPTED in chunk:
                nodes.append(INTERRUPTED)
            elif mode == "custom":
                notes_sent.append(chunk)
        state = await self.graph.aget_state(self.config)
        return Turn(nodes, notes_sent, state.values)

    async def say(self, text: str, *, note_id: str | None = NOTE.note_id) -> Turn:
        return await self.run(
            {
                "messages": [HumanMessage(text, id=f"msg-{uuid4().hex}")],
                "project_id": PROJECT,
                "note_id": note_id,
            }
        )

    async def decide(self, interrupt_id: str, decision: Outcome, **extra: Any) -> Turn:
        answer = ConsentDecision(
            approval_id=interrupt_id, decision=decision, decided_by="test/alice", **extra
        )
        return await self.run(Command(resume={interrupt_id: answer.model_dump()}))

    async def pending(self) -> tuple[str, ConsentRequest]:
        state = await self.graph.aget_state(self.config)
        assert len(state.interrupts) == 1
        interrupt = state.interrupts[0]
        return interrupt.id, ConsentRequest.model_validate(interrupt.value)

    async def has_pending(self) -> bool:
        return bool((await self.graph.aget_state(self.config)).interrupts)
