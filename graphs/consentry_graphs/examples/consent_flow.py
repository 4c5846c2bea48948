"""The five-node consent graph of ``consentry bench --graph consent_flow``: a consent
conversation without a model, so a server's cost is its serving stack alone.

    analyze_message → draft_change → request_change_consent → apply_change | cancel_change

Every node is trivial and deterministic: ``analyze_message`` counts the words of the user's
message, ``draft_change`` makes a proposal of them, ``request_change_consent`` asks with the
consent kit (approve or reject), and ``apply_change`` (once per approval id, through the effect
ledger) or ``cancel_change`` answers with one message whose id is made from the approval id.

Consentry serves it with
``CONSENTRY_GRAPHS=consent_flow=consentry_graphs.examples.consent_flow:graph_spec``; the bench's
naive baseline compiles :func:`build_consent_flow_graph` on its own checkpointer.
``memory_flow`` is the same graph (:func:`add_consent_flow`) with three of its nodes also reading
and writing the Store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, Field

from consentry_graphs.consent import ConsentKind, run_effect_once
from consentry_graphs.registry import GraphSpec
from consentry_graphs.services import graph_services

__all__ = [
    "APPLIED",
    "CANCELLED",
    "CHANGE",
    "GRAPH_NAME",
    "STEP_LABELS",
    "AppliedChange",
    "ChangeProposal",
    "ConsentFlowState",
    "add_consent_flow",
    "analyze_message",
    "apply_change",
    "build_consent_flow_graph",
    "cancel_change",
    "graph_spec",
]

GRAPH_NAME = "consent_flow"
APPLIED = "Applied"
"""How ``apply_change``'s message starts."""
CANCELLED = "Cancelled"
"""How ``cancel_change``'s message starts."""


class ChangeProposal(BaseModel):
    """What the person sees in the consent event."""

    words: int = Field(ge=0)
    summary: str


CHANGE: ConsentKind[ChangeProposal, BaseModel] = ConsentKind(
    name="change",
    proposal_model=ChangeProposal,
    edit_model=None,
    allowed_decisions=("approve", "reject"),
    description="Apply a change drafted from the user's message.",
)


class ConsentFlowState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    project_id: str  # a server sends the thread's project and note with a message; unused
    note_id: str | None
    words: int
    proposal: dict[str, Any] | None
    decision: dict[str, Any] | None


class AppliedChange(BaseModel):
    """The effect's result, kept in the effect ledger under the approval id."""

    reply: str


def analyze_message(state: ConsentFlowState) -> dict[str, Any]:
    text = next((m.text for m in reversed(state["messages"]) if isinstance(m, HumanMessage)), "")
    return {"words": len(text.split())}


def draft_change(state: ConsentFlowState) -> dict[str, Any]:
    words = state["words"]
    proposal = ChangeProposal(words=words, summary=f"Record a message of {words} words")
    return {"proposal": proposal.model_dump(), "decision": None}


def request_change_consent(state: ConsentFlowState) -> dict[str, Any]:
    # Runs again from here when the decision arrives: everything before ask() is pure and cheap.
    proposal = ChangeProposal.model_validate(state["proposal"])
    decision = CHANGE.ask(title=f"{proposal.summary}?", proposal=proposal)
    return {"decision": decision.to_state()}


def route_after_request_change_consent(
    state: ConsentFlowState,
) -> Literal["apply_change", "cancel_change"]:
    return "apply_change" if CHANGE.restore(state["decision"]).approved else "cancel_change"


async def apply_change(state: ConsentFlowState) -> dict[str, Any]:
    proposal = ChangeProposal.model_validate(state["proposal"])
    decision = CHANGE.restore(state["decision"])

    async def record() -> AppliedChange:
        return AppliedChange(reply=f"{APPLIED}: {proposal.summary}.")

    applied = await run_effect_once(
        graph_services().effects,
        approval_id=decision.approval_id,
        kind=CHANGE.name,
        result_model=AppliedChange,
        effect=record,
    )
    reply = AIMessage(applied.reply, id=f"applied-{decision.approval_id}")
    return {"messages": [reply], "proposal": None}


def cancel_change(state: ConsentFlowState) -> dict[str, Any]:
    decision = CHANGE.restore(state["decision"])
    reason = "it expired" if decision.decision == "expire" else "it was rejected"
    reply = AIMessage(
        f"{CANCELLED}: nothing was changed ({reason}).", id=f"cancelled-{decision.approval_id}"
    )
    return {"messages": [reply], "proposal": None}


STEP_LABELS = {
    "analyze_message": "Reading your message",
    "draft_change": "Drafting a change",
    "request_change_consent": "Asking for your approval",
    "apply_change": "Applying the change",
    "cancel_change": "Leaving things as they are",
}


def add_consent_flow(
    builder: StateGraph[Any, Any, Any, Any],
    *,
    analyze: Callable[..., Any] = analyze_message,
    apply: Callable[..., Any] = apply_change,
    cancel: Callable[..., Any] = cancel_change,
) -> None:
    """The five nodes and their edges on ``builder``; ``analyze``, ``apply`` and ``cancel`` run
    as ``analyze_message``, ``apply_change`` and ``cancel_change`` (memory_flow's, which call
    this module's)."""
    builder.add_node("analyze_message", analyze)
    builder.add_node("draft_change", draft_change)
    builder.add_node("request_change_consent", request_change_consent)
    builder.add_node("apply_change", apply)
    builder.add_node("cancel_change", cancel)
    builder.add_edge(START, "analyze_message")
    builder.add_edge("analyze_message", "draft_change")
    builder.add_edge("draft_change", "request_change_consent")
    builder.add_conditional_edges("request_change_consent", route_after_request_change_consent)
    builder.add_edge("apply_change", END)
    builder.add_edge("cancel_change", END)


def build_consent_flow_graph(
    model: BaseChatModel | None = None, checkpointer: BaseCheckpointSaver[Any] | None = None
) -> CompiledStateGraph[ConsentFlowState, None, ConsentFlowState, ConsentFlowState]:
    """The server passes its chat model to every graph; this one needs none."""
    builder = StateGraph(ConsentFlowState)
    add_consent_flow(builder)
    return builder.compile(checkpointer=checkpointer, name=GRAPH_NAME)


def graph_spec() -> GraphSpec:
    """What ``CONSENTRY_GRAPHS=consent_flow=consentry_graphs.examples.consent_flow:graph_spec``
    loads."""
    return GraphSpec(
        name=GRAPH_NAME,
        build=build_consent_flow_graph,
        step_labels=STEP_LABELS,
        consent_kinds={CHANGE.name: CHANGE},
    )
