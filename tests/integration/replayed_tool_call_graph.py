"""A graph whose first step has two nodes side by side: ``ask_for_weather`` asks for a tool,
``look_up`` fails while ``FAILURES`` says so. The run fails with the tool call told and its
writes stored; the run that continues it (``POST .../retry``) runs ``look_up`` again, LangGraph
replays ``ask_for_weather``'s stored writes (the same tool call) without running it, and the
tool runs (``tests/integration/test_tool_calls.py``).

    START → ask_for_weather → run_tools → END
          → look_up         → END
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from consentry_graphs.examples.weather_tools import TOOLS
from consentry_graphs.registry import CompiledGraph, GraphSpec

__all__ = ["CALL", "FAILURES", "graph_spec"]

FAILURES = {"look_up": 0}
"""How many more times ``look_up`` fails (the test sets it)."""
CALL = {"name": "get_weather", "args": {"city": "Oslo"}, "id": "call-oslo", "type": "tool_call"}


async def ask_for_weather(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage("", id="ask-oslo", tool_calls=[CALL])]}


async def look_up(state: MessagesState) -> dict[str, Any]:
    if FAILURES["look_up"] > 0:
        FAILURES["look_up"] -= 1
        raise RuntimeError("the lookup failed")
    return {}


def _build(model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any]) -> CompiledGraph:
    builder = StateGraph(MessagesState)
    builder.add_node("ask_for_weather", ask_for_weather)
    builder.add_node("look_up", look_up)
    builder.add_node("run_tools", ToolNode(TOOLS))
    builder.add_edge(START, "ask_for_weather")
    builder.add_edge(START, "look_up")
    builder.add_edge("ask_for_weather", "run_tools")
    builder.add_edge("run_tools", END)
    builder.add_edge("look_up", END)
    return builder.compile(checkpointer=checkpointer, name="replayed_tools")


def graph_spec() -> GraphSpec:
    return GraphSpec(name="replayed_tools", build=_build, step_labels={}, consent_kinds={})
