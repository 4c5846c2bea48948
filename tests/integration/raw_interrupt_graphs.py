"""Plain LangGraph graphs with raw ``interrupt()`` calls, served by tests: the examples, and one
whose node refuses an answer (raises on it)."""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from typing_extensions import TypedDict


class CountState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    count: int


def ask_count(state: CountState) -> dict[str, int]:
    answer = interrupt({"question": "How many?"})
    if not isinstance(answer, int):
        raise ValueError(f"not a count: {answer!r}")
    return {"count": answer}


def say_count(state: CountState) -> dict[str, list[AnyMessage]]:
    return {"messages": [AIMessage(f"Counted {state['count']}.")]}


counting = StateGraph(CountState)
counting.add_node(ask_count)
counting.add_node(say_count)
counting.add_edge(START, "ask_count")
counting.add_edge("ask_count", "say_count")
counting.add_edge("say_count", END)
