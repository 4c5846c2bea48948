"""Graphs that ask the consent kit for a kind they do not declare (a graph developer's mistake):
``visible`` names the kind in its node, so start-up refuses it; ``hidden`` asks through a
function of another module, which only the run can find out."""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from consentry_graphs.examples.refund_consent import REFUND, RefundProposal
from consentry_graphs.registry import GraphSpec
from tests.integration.refund_asks import ask_for_refund


class RefundState(TypedDict, total=False):
    messages: list[Any]
    decision: dict[str, Any] | None


def request_refund_consent(state: RefundState) -> dict[str, Any]:
    proposal = RefundProposal(order_id="A-1", amount_cents=500)
    return {"decision": REFUND.ask(title="Refund order A-1?", proposal=proposal).to_state()}


def request_refund_elsewhere(state: RefundState) -> dict[str, Any]:
    return {"decision": ask_for_refund()}


def _graph(node: Any) -> Any:
    def build(
        _: BaseChatModel, saver: BaseCheckpointSaver[Any]
    ) -> CompiledStateGraph[Any, Any, Any, Any]:
        builder = StateGraph(RefundState)
        builder.add_node("request_refund_consent", node)
        builder.add_edge(START, "request_refund_consent")
        builder.add_edge("request_refund_consent", END)
        return builder.compile(checkpointer=saver)

    return build


visible = GraphSpec(
    name="visible", build=_graph(request_refund_consent), step_labels={}, consent_kinds={}
)
misnamed = GraphSpec(
    name="misnamed",
    build=_graph(request_refund_consent),
    step_labels={},
    consent_kinds={"refunds": REFUND},
)
hidden = GraphSpec(
    name="hidden", build=_graph(request_refund_elsewhere), step_labels={}, consent_kinds={}
)
