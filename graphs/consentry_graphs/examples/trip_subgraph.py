"""Raw ``interrupt()`` calls inside a subgraph, two at once in parallel branches: each becomes
its own consent, answered by its own approval id. No Consentry import.

Served with ``CONSENTRY_GRAPHS=trip=consentry_graphs.examples.trip_subgraph:graph``.

    plan (subgraph: ask_origin ∥ ask_destination → summarize) → confirm → END
"""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from typing_extensions import TypedDict


class TripState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    origin: str
    destination: str


def ask_origin(state: TripState) -> dict[str, str]:
    return {"origin": str(interrupt({"question": "Where from?"}))}


def ask_destination(state: TripState) -> dict[str, str]:
    return {"destination": str(interrupt({"question": "Where to?"}))}


def summarize(state: TripState) -> dict[str, list[AnyMessage]]:
    return {"messages": [AIMessage(f"From {state['origin']} to {state['destination']}.")]}


plan_builder = StateGraph(TripState)
plan_builder.add_node(ask_origin)
plan_builder.add_node(ask_destination)
plan_builder.add_node(summarize)
plan_builder.add_edge(START, "ask_origin")
plan_builder.add_edge(START, "ask_destination")
plan_builder.add_edge(["ask_origin", "ask_destination"], "summarize")
plan_builder.add_edge("summarize", END)
plan = plan_builder.compile()


def confirm(state: TripState) -> dict[str, list[AnyMessage]]:
    answer = interrupt({"question": "Book it?", "options": ["yes", "no"]})
    text = "Booked." if answer == "yes" else "Not booked."
    return {"messages": [AIMessage(text)]}


builder = StateGraph(TripState)
builder.add_node("plan", plan)
builder.add_node(confirm)
builder.add_edge(START, "plan")
builder.add_edge("plan", "confirm")
builder.add_edge("confirm", END)

graph = builder.compile()
