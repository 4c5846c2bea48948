"""A graph that remembers across threads through the Store, in each of LangGraph's three ways
to reach it: ``runtime.store`` in an async node, ``get_store()`` in a sync node (its worker
thread), and a tool's ``InjectedStore`` argument (``ToolNode``)."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.config import get_store
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedStore, ToolNode
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from tests.system.kill_points_graph import reach

__all__ = ["STORE_WRITTEN", "memory_graph"]

MEMORIES = ("memories",)
STORE_WRITTEN = "store-written"
"""A kill point (``tests/system/kill_points_graph.py``): in ``remember``, after its write."""


async def remember(state: MessagesState, runtime: Runtime[None]) -> dict[str, Any]:
    """ "remember X" keeps X, under the message's id (a step run again writes it again, once)."""
    last = state["messages"][-1]
    text = last.text
    if isinstance(last, HumanMessage) and text.lower().startswith("remember "):
        assert runtime.store is not None
        await runtime.store.aput(MEMORIES, str(last.id), {"text": text[len("remember ") :]})
        await reach(STORE_WRITTEN)
    return {}


def recall(state: MessagesState) -> dict[str, Any]:
    """The memories closest to the message, from a sync node."""
    found = get_store().search(MEMORIES, query=state["messages"][-1].text, limit=3)
    said = "; ".join(str(item.value["text"]) for item in found) or "nothing yet"
    return {"messages": [AIMessage(f"I remember: {said}")]}


@tool
def count_memories(store: Annotated[BaseStore, InjectedStore()]) -> str:
    """How many memories there are."""
    return f"{len(store.search(MEMORIES, limit=100))} memories"


def call_tool(state: MessagesState) -> dict[str, Any]:
    call = {"name": "count_memories", "args": {}, "id": f"count-{len(state['messages'])}"}
    return {"messages": [AIMessage("", tool_calls=[call])]}


_graph = StateGraph(MessagesState)
_graph.add_node("remember", remember)
_graph.add_node("recall", recall)
_graph.add_node("call_tool", call_tool)
_graph.add_node("tools", ToolNode([count_memories]))
_graph.add_edge(START, "remember")
_graph.add_edge("remember", "recall")
_graph.add_edge("recall", "call_tool")
_graph.add_edge("call_tool", "tools")
_graph.add_edge("tools", END)
memory_graph = _graph.compile()
