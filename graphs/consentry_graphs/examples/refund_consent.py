"""A worked example of the consent kit: refund an order only after a person says so.

``docs/consent-kit.md`` walks through this file, and ``tests/unit/test_docs_examples.py`` runs it,
on its own and served by the app with
``CONSENTRY_GRAPHS=refund=consentry_graphs.examples.refund_consent:graph_spec``.

    draft_refund → request_refund_consent → issue_refund | skip_refund
                 → END (the message names no order)
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypedDict
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, ConfigDict, Field

from consentry_graphs.consent import ConsentKind, run_effect_once
from consentry_graphs.registry import GraphSpec
from consentry_graphs.services import graph_services
from consentry_graphs.window import outside_window

__all__ = ["REFUND", "PaymentProvider", "build_refund_graph", "graph_spec"]


class RefundProposal(BaseModel):
    """What the person sees in the consent event."""

    order_id: str
    amount_cents: int = Field(gt=0)


class RefundRevision(BaseModel):
    """What a person may change (decision `edit`): the amount."""

    model_config = ConfigDict(extra="forbid")

    amount_cents: int = Field(gt=0, le=1_000_000)


REFUND: ConsentKind[RefundProposal, RefundRevision] = ConsentKind(
    name="refund",
    proposal_model=RefundProposal,
    edit_model=RefundRevision,
    allowed_decisions=("approve", "edit", "reject"),
    ttl_seconds=3600,  # open for an hour, instead of the server's default
    description="Refund an order to the customer's card.",
)


class RefundState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]  # the server sends the user's message
    project_id: str
    note_id: str | None
    proposal: dict[str, Any] | None
    decision: dict[str, Any] | None


_ORDER = re.compile(r"\border\s+#?(?P<order_id>\w+)\D*?(?P<cents>\d+)\s*cents\b", re.IGNORECASE)


def _say(text: str) -> AIMessage:
    return AIMessage(text, id=f"msg-{uuid4().hex}")


async def draft_refund(state: RefundState) -> dict[str, Any]:
    """Read the order and the amount from the user's message (and let the oldest messages go)."""
    forget = outside_window(state["messages"], graph_services().conversation_window)
    text = next((m.text for m in reversed(state["messages"]) if isinstance(m, HumanMessage)), "")
    match = _ORDER.search(text)
    if match is None:
        example = "\u201crefund order 7, 1500 cents\u201d"
        ask_again = _say(f"Which order, and how much? Say {example}.")
        return {"proposal": None, "messages": [*forget, ask_again]}
    proposal = RefundProposal(order_id=match["order_id"], amount_cents=int(match["cents"]))
    return {"proposal": proposal.model_dump(), "decision": None, "messages": forget}


def route_after_draft_refund(state: RefundState) -> Literal["request_refund_consent", "__end__"]:
    return "request_refund_consent" if state.get("proposal") else "__end__"


async def request_refund_consent(state: RefundState) -> dict[str, Any]:
    # Runs again from here when the decision arrives: everything before ask() is pure and cheap.
    proposal = RefundProposal.model_validate(state["proposal"])
    decision = REFUND.ask(title=f"Refund order {proposal.order_id}?", proposal=proposal)
    return {"decision": decision.to_state()}


def route_after_request_refund_consent(
    state: RefundState,
) -> Literal["issue_refund", "skip_refund"]:
    return "issue_refund" if REFUND.restore(state["decision"]).approved else "skip_refund"


class Refund(BaseModel):
    """The effect's result, kept in the effect ledger under the approval id."""

    refund_id: str
    order_id: str
    amount_cents: int


class PaymentProvider:
    """Stands for the payment provider. Like a real one, it takes an idempotency key: the same key
    twice refunds once (this covers a crash between the refund and the ledger write)."""

    def __init__(self) -> None:
        self.refunds: dict[str, Refund] = {}
        self.calls: list[str] = []

    async def refund(self, *, order_id: str, amount_cents: int, idempotency_key: str) -> Refund:
        self.calls.append(idempotency_key)
        if idempotency_key not in self.refunds:
            refund_id = f"re_{len(self.refunds) + 1}"
            self.refunds[idempotency_key] = Refund(
                refund_id=refund_id, order_id=order_id, amount_cents=amount_cents
            )
        return self.refunds[idempotency_key]


PAYMENTS = PaymentProvider()


async def issue_refund(state: RefundState) -> dict[str, Any]:
    proposal = RefundProposal.model_validate(state["proposal"])
    decision = REFUND.restore(state["decision"])  # a TypedDecision[RefundRevision]
    amount = decision.edit.amount_cents if decision.edit else proposal.amount_cents
    refund = await run_effect_once(
        graph_services().effects,
        approval_id=decision.approval_id,
        kind=REFUND.name,
        result_model=Refund,
        effect=lambda: PAYMENTS.refund(
            order_id=proposal.order_id,
            amount_cents=amount,
            idempotency_key=decision.approval_id,
        ),
    )
    text = f"Refunded {refund.amount_cents} cents for order {refund.order_id} ({refund.refund_id})."
    return {"messages": [_say(text)], "proposal": None}


async def skip_refund(state: RefundState) -> dict[str, Any]:
    proposal = RefundProposal.model_validate(state["proposal"])
    decision = REFUND.restore(state["decision"])
    if decision.decision == "expire":
        text = f"The refund request for order {proposal.order_id} expired; nothing was refunded."
    else:
        text = f"OK, order {proposal.order_id} was not refunded."
    return {"messages": [_say(text)], "proposal": None}


STEP_LABELS = {
    "draft_refund": "Reading the order",
    "request_refund_consent": "Asking for your approval",
    "issue_refund": "Refunding",
    "skip_refund": "Leaving the order as it is",
}


def build_refund_graph(
    model: BaseChatModel | None = None, checkpointer: BaseCheckpointSaver[Any] | None = None
) -> CompiledStateGraph[RefundState, None, RefundState, RefundState]:
    """The server passes its chat model to every graph; this one needs none."""
    builder = StateGraph(RefundState)
    builder.add_node("draft_refund", draft_refund)
    builder.add_node("request_refund_consent", request_refund_consent)
    builder.add_node("issue_refund", issue_refund)
    builder.add_node("skip_refund", skip_refund)
    builder.add_edge(START, "draft_refund")
    builder.add_conditional_edges("draft_refund", route_after_draft_refund)
    builder.add_conditional_edges("request_refund_consent", route_after_request_refund_consent)
    builder.add_edge("issue_refund", END)
    builder.add_edge("skip_refund", END)
    return builder.compile(checkpointer=checkpointer, name="refund")


def graph_spec() -> GraphSpec:
    """What ``CONSENTRY_GRAPHS=refund=consentry_graphs.examples.refund_consent:graph_spec``
    loads."""
    return GraphSpec(
        name="refund",
        build=build_refund_graph,
        step_labels=STEP_LABELS,
        consent_kinds={REFUND.name: REFUND},
    )
