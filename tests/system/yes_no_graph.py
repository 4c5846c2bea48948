"""A plain LangGraph graph that asks a yes/no question: a raw ``interrupt()`` whose
``response_schema`` is ``{"type": "boolean"}``, as LangGraph's docs ask for a confirmation. No
Consentry import. The web app shows it as the question with a Yes and a No button
(``tests/system/test_web_app_yes_no.py``).

    confirm_sending → report_outcome → END

Served with ``CONSENTRY_GRAPHS=confirm=tests.system.yes_no_graph:graph``.
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from typing_extensions import TypedDict

__all__ = ["KEPT", "QUESTION", "SENT", "graph"]

QUESTION = "Send the weekly report to Ada now?"
SENT = "Sent the weekly report to Ada."
KEPT = "Kept the weekly report: nothing was sent."
YES_NO: dict[str, Any] = {"type": "boolean"}


class ConfirmState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    send: bool


def confirm_sending(state: ConfirmState) -> dict[str, bool]:
    answer = interrupt({"question": QUESTION, "report": "weekly.pdf"}, response_schema=YES_NO)
    return {"send": answer is True}


def report_outcome(state: ConfirmState) -> dict[str, list[AnyMessage]]:
    return {"messages": [AIMessage(SENT if state["send"] else KEPT)]}


builder = StateGraph(ConfirmState)
builder.add_node(confirm_sending)
builder.add_node(report_outcome)
builder.add_edge(START, "confirm_sending")
builder.add_edge("confirm_sending", "report_outcome")
builder.add_edge("report_outcome", END)

graph = builder.compile()
