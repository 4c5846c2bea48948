"""A graph whose runs wait at a gate the test opens, then ask a raw interrupt (plain LangGraph):

    hold_at_gate → ask_to_go_on → say_done → END

Served in the test's own event loop (``open_live``): :data:`GATE` is the ``asyncio.Event`` the
test sets, :data:`REACHED` the one a run sets when it waits at the gate (each test puts new ones
here: an event belongs to one loop). Served with ``CONSENTRY_GRAPHS=`` :data:`SERVED`.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from typing_extensions import TypedDict

__all__ = ["GATE", "REACHED", "SERVED", "graph"]

GATE = asyncio.Event()
REACHED = asyncio.Event()
SERVED = "gate=tests.integration.gate_graph:graph"


class GateState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    answer: str


async def hold_at_gate(state: GateState) -> dict[str, Any]:
    REACHED.set()
    await GATE.wait()
    return {"answer": ""}


def ask_to_go_on(state: GateState) -> dict[str, Any]:
    return {"answer": interrupt({"question": "Go on?"})}


def say_done(state: GateState) -> dict[str, Any]:
    return {"messages": [AIMessage(f"Done: {state['answer']}")]}


_builder = StateGraph(GateState)
_builder.add_node(hold_at_gate)
_builder.add_node(ask_to_go_on)
_builder.add_node(say_done)
_builder.add_edge(START, "hold_at_gate")
_builder.add_edge("hold_at_gate", "ask_to_go_on")
_builder.add_edge("ask_to_go_on", "say_done")
_builder.add_edge("say_done", END)
graph = _builder.compile()
