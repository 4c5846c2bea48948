"""The bench's memory graph on its own: consent_flow's conversation, with exactly two Store calls
a conversation — the message reads the person's five most recent decisions, the decision (an
approval or a rejection) remembers it under the proposal, so a second conversation reads the
first's, and a person holds one item per proposal however often it is decided."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import Op, PutOp, Result, SearchOp
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from consentry_graphs.consent import ConsentDecision, InMemoryEffectLedger, Outcome
from consentry_graphs.examples.consent_flow import CHANGE
from consentry_graphs.examples.memory_flow import build_memory_flow_graph
from consentry_graphs.registry import load_graphs
from consentry_graphs.services import GraphServices, serving

MESSAGE = "Add a summary of our discussion to my note"  # nine words
SUMMARY = "Record a message of 9 words"
NAMESPACE = ("memory_flow", "decisions", "test/alice")


class CountingStore(InMemoryStore):
    """LangGraph's in-memory store, keeping every operation it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[Op] = []

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.ops += ops
        return await super().abatch(ops)


class Conversations:
    """Threads of the graph for one person, on an in-memory saver and store."""

    def __init__(self) -> None:
        self.store = CountingStore()
        self.graph = build_memory_flow_graph(None, InMemorySaver(), store=self.store)
        self.services = GraphServices(notes=None, effects=InMemoryEffectLedger(), user="test/alice")

    async def run(self, thread: str, graph_input: Any) -> list[tuple[str, Any]]:
        config: RunnableConfig = {"configurable": {"thread_id": thread}}
        updates: list[tuple[str, Any]] = []
        with serving(self.services):
            async for chunk in self.graph.astream(graph_input, config, stream_mode="updates"):
                updates += list(chunk.items())
        return updates

    async def converse(self, thread: str, decision: Outcome) -> list[tuple[str, Any]]:
        """A message then a decision on its consent: the updates of both runs."""
        asked = await self.run(thread, {"messages": [HumanMessage(MESSAGE, id=f"m-{thread}")]})
        (interrupt,) = asked[-1][1]
        answer = ConsentDecision(approval_id=interrupt.id, decision=decision, decided_by="t/a")
        decided = await self.run(thread, Command(resume={interrupt.id: answer.model_dump()}))
        return asked + decided


async def test_a_conversation_searches_on_its_message_and_puts_on_its_decision() -> None:
    flows = Conversations()

    updates = await flows.converse("t-1", "approve")

    assert [node for node, _ in updates] == [
        "analyze_message",
        "draft_change",
        "__interrupt__",
        "request_change_consent",
        "apply_change",
    ]
    assert updates[0][1] == {"words": 9, "memories": []}
    (reply,) = updates[4][1]["messages"]
    assert reply == AIMessage(f"Applied: {SUMMARY}.", id=reply.id)
    value = {"summary": SUMMARY, "decision": "approve"}
    assert flows.store.ops == [
        SearchOp(NAMESPACE, limit=5),
        PutOp(NAMESPACE, SUMMARY, value),
    ]


async def test_the_next_conversation_reads_the_decision_and_replaces_it() -> None:
    flows = Conversations()
    await flows.converse("t-1", "approve")

    updates = await flows.converse("t-2", "reject")

    assert [type(op).__name__ for op in flows.store.ops] == [
        "SearchOp",
        "PutOp",
        "SearchOp",
        "PutOp",
    ]
    assert updates[0][1] == {"words": 9, "memories": [f"approve: {SUMMARY}"]}
    assert updates[-1][0] == "cancel_change"
    assert updates[-1][1]["messages"][0].content == (
        "Cancelled: nothing was changed (it was rejected)."
    )
    (item,) = await flows.store.asearch(("memory_flow",))
    assert (item.namespace, item.key) == (NAMESPACE, SUMMARY)
    assert item.value == {"summary": SUMMARY, "decision": "reject"}


def test_consentry_loads_it_by_name_with_consent_flows_kind_and_labels() -> None:
    graphs = load_graphs({"memory_flow": "consentry_graphs.examples.memory_flow:graph_spec"})

    spec = graphs["memory_flow"]
    assert (spec.name, dict(spec.consent_kinds)) == ("memory_flow", {"change": CHANGE})
    assert spec.label_for("analyze_message") == "Reading your message"
