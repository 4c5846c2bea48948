"""A consent node of your own, with the kit in graphs/consent.py (see docs/architecture.md).

A tiny graph that asks before it issues a refund: `request_refund_consent` only asks,
`issue_refund` acts once per approval id. tests/unit/test_docs_examples.py runs it.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, Field

from graphs.consent import ConsentKind


class RefundProposal(BaseModel):
    order_id: str
    amount_cents: int = Field(gt=0)


class RefundRevision(BaseModel):
    amount_cents: int = Field(gt=0)


REFUND = ConsentKind(name="refund", proposal_model=RefundProposal, edit_model=RefundRevision)

ISSUED: dict[str, int] = {}
"""Stands for the payment provider: refunds keyed by approval id, so a re-run pays once."""


class RefundState(TypedDict, total=False):
    order_id: str
    amount_cents: int
    decision: dict[str, Any]
    outcome: str


async def request_refund_consent(state: RefundState) -> dict[str, Any]:
    proposal = RefundProposal(order_id=state["order_id"], amount_cents=state["amount_cents"])
    decision = REFUND.ask(title=f"Refund order {proposal.order_id}?", proposal=proposal)
    return {"decision": decision.to_state()}


async def issue_refund(state: RefundState) -> dict[str, Any]:
    decision = REFUND.restore(state["decision"])
    if not decision.approved:
        return {"outcome": "not refunded"}
    amount = decision.edit.amount_cents if decision.edit else state["amount_cents"]
    ISSUED.setdefault(decision.approval_id, amount)
    return {"outcome": f"refunded {ISSUED[decision.approval_id]} cents"}


def build_refund_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    builder = StateGraph(RefundState)
    builder.add_node("request_refund_consent", request_refund_consent)
    builder.add_node("issue_refund", issue_refund)
    builder.add_edge(START, "request_refund_consent")
    builder.add_edge("request_refund_consent", "issue_refund")
    builder.add_edge("issue_refund", END)
    return builder.compile(checkpointer=checkpointer)
