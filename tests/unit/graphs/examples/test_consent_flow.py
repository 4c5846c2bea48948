"""The bench's five-node consent graph on its own: a message is counted and drafted, then asks
with the kit; an approval applies the change once and says so, a rejection (or an expiry)
cancels it and applies nothing. Each run is asserted as its whole sequence of node updates."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from consentry_graphs.consent import ConsentDecision, ConsentRequest, InMemoryEffectLedger, Outcome
from consentry_graphs.examples.consent_flow import CHANGE, build_consent_flow_graph
from consentry_graphs.registry import load_graphs
from consentry_graphs.review_shape import ActionRequest, ReviewConfig
from consentry_graphs.services import GraphServices, serving

MESSAGE = "Add a summary of our discussion to my note"  # nine words
PROPOSAL = {"words": 9, "summary": "Record a message of 9 words"}


class Thread:
    """One thread of the graph on an in-memory saver, with its effect ledger."""

    def __init__(self) -> None:
        self.graph = build_consent_flow_graph(None, InMemorySaver())
        self.ledger = InMemoryEffectLedger()
        self.config: RunnableConfig = {"configurable": {"thread_id": "thread-1"}}

    async def run(self, graph_input: Any) -> list[tuple[str, Any]]:
        """Run until the graph stops: every update as (node, what it wrote)."""
        # The graph reads no notes: its one effect goes through the ledger.
        services = GraphServices(notes=None, effects=self.ledger, user="test/alice")
        updates: list[tuple[str, Any]] = []
        with serving(services):
            async for chunk in self.graph.astream(graph_input, self.config, stream_mode="updates"):
                updates += list(chunk.items())
        return updates

    async def ask(self) -> str:
        """Send the message; the id of the consent it asks."""
        updates = await self.run({"messages": [HumanMessage(MESSAGE, id="m-1")]})
        ((_, (interrupt,)),) = updates[2:]
        return str(interrupt.id)

    async def decide(self, approval_id: str, decision: Outcome) -> list[tuple[str, Any]]:
        answer = ConsentDecision(approval_id=approval_id, decision=decision, decided_by="t/alice")
        return await self.run(Command(resume={approval_id: answer.model_dump(mode="json")}))


def _decided(approval_id: str, decision: Outcome) -> dict[str, Any]:
    return {
        "approval_id": approval_id,
        "decision": decision,
        "edited": None,
        "comment": None,
        "decided_by": "t/alice",
    }


async def test_a_message_is_counted_and_drafted_then_asks_for_consent_with_the_kit() -> None:
    thread = Thread()

    updates = await thread.run({"messages": [HumanMessage(MESSAGE, id="m-1")]})

    assert [node for node, _ in updates] == ["analyze_message", "draft_change", "__interrupt__"]
    assert updates[0][1] == {"words": 9}
    assert updates[1][1] == {"proposal": PROPOSAL, "decision": None}
    (interrupt,) = updates[2][1]
    assert ConsentRequest.model_validate(interrupt.value) == ConsentRequest(
        kind="change",
        title="Record a message of 9 words?",
        proposal=PROPOSAL,
        allowed_decisions=["approve", "reject"],
        # The same request as one action LangChain's human-in-the-loop middleware reviews.
        action_requests=[
            ActionRequest(name="change", args=PROPOSAL, description="Record a message of 9 words?")
        ],
        review_configs=[
            ReviewConfig(action_name="change", allowed_decisions=["approve", "reject"])
        ],
    )


async def test_an_approval_applies_the_change_once_and_says_so() -> None:
    thread = Thread()
    approval_id = await thread.ask()

    updates = await thread.decide(approval_id, "approve")

    reply = AIMessage("Applied: Record a message of 9 words.", id=f"applied-{approval_id}")
    assert updates == [
        ("request_change_consent", {"decision": _decided(approval_id, "approve")}),
        ("apply_change", {"messages": [reply], "proposal": None}),
    ]
    assert thread.ledger.results == {approval_id: {"reply": reply.content}}
    assert thread.ledger.kinds == {approval_id: "change"}


async def test_a_rejection_cancels_the_change_and_applies_nothing() -> None:
    thread = Thread()
    approval_id = await thread.ask()

    updates = await thread.decide(approval_id, "reject")

    reply = AIMessage(
        "Cancelled: nothing was changed (it was rejected).", id=f"cancelled-{approval_id}"
    )
    assert updates == [
        ("request_change_consent", {"decision": _decided(approval_id, "reject")}),
        ("cancel_change", {"messages": [reply], "proposal": None}),
    ]
    assert thread.ledger.results == {}


async def test_an_expired_consent_cancels_the_change_too() -> None:
    thread = Thread()
    approval_id = await thread.ask()

    updates = await thread.decide(approval_id, "expire")

    assert [node for node, _ in updates] == ["request_change_consent", "cancel_change"]
    assert updates[1][1]["messages"][0].content == ("Cancelled: nothing was changed (it expired).")
    assert thread.ledger.results == {}


def test_consentry_loads_it_by_name_with_its_consent_kind() -> None:
    graphs = load_graphs({"consent_flow": "consentry_graphs.examples.consent_flow:graph_spec"})

    spec = graphs["consent_flow"]
    assert (spec.name, dict(spec.consent_kinds)) == ("consent_flow", {"change": CHANGE})
    assert spec.label_for("request_change_consent") == "Asking for your approval"
