"""Running the tutor graph alone in tests: plain LangGraph, an in-memory checkpointer, the offline
model and a notes store written here, which applies each approval at most once."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from consentry_graphs.consent import ConsentDecision, ConsentRequest, InMemoryEffectLedger, Outcome
from consentry_graphs.models.offline import OfflineChatModel
from consentry_graphs.services import GraphServices, NoteSnapshot, serving
from consentry_graphs.tutor.graph import build_tutor_graph
from consentry_graphs.tutor.memory_notes import InMemoryNotesStore

PROJECT = "project-1"
NOTE = NoteSnapshot(
    note_id="note-1",
    project_id=PROJECT,
    title="RAG",
    content="Retrieval-augmented generation uses documents.",
    version=1,
)
INTERRUPTED = "__interrupt__"
NOW = datetime(2026, 1, 2, 16, 0, tzinfo=UTC)
"""The graph's clock in these tests (``GraphServices.clock``)."""


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
    def services(self) -> GraphServices:
        return GraphServices(
            notes=self.store, effects=InMemoryEffectLedger(), user="test/alice", clock=lambda: NOW
        )

    async def run(self, graph_input: Any, config: RunnableConfig | None = None) -> Turn:
        nodes: list[str] = []
        notes_sent: list[dict[str, Any]] = []
        with serving(self.services):
            async for mode, chunk in self.graph.astream(
                graph_input, config or self.config, stream_mode=["tasks", "updates", "custom"]
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
