"""A plain LangGraph graph with a raw ``interrupt()``: no Consentry import at all.

Served with ``CONSENTRY_GRAPHS=city=consentry_graphs.examples.ask_city:graph`` (a compiled
graph: the server attaches its own checkpointer). The interrupt becomes a consent of kind
``interrupt``; the answer (``{"approval_id": ..., "value": "Lisbon"}``) is what ``interrupt()``
returns.

    ask_city → book_trip → END
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
    city: str


def ask_city(state: TripState) -> dict[str, str]:
    city = interrupt({"question": "Which city?"})
    return {"city": str(city)}


def book_trip(state: TripState) -> dict[str, list[AnyMessage]]:
    return {"messages": [AIMessage(f"Booked a trip to {state['city']}.")]}


builder = StateGraph(TripState)
builder.add_node(ask_city)
builder.add_node(book_trip)
builder.add_edge(START, "ask_city")
builder.add_edge("ask_city", "book_trip")
builder.add_edge("book_trip", END)

graph = builder.compile()
