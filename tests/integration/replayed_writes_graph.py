"""A graph whose one step has two nodes side by side: ``say_hello`` answers, ``look_up`` fails
while ``FAILURES`` says so. The run fails with ``say_hello``'s message told and its writes stored;
the run that continues it (``POST .../retry``) runs ``look_up`` again, and LangGraph replays
``say_hello``'s stored writes (the same message) without running it
(``tests/integration/test_crash_recovery.py``).

    START → say_hello → END
          → look_up   → END
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from consentry_graphs.registry import CompiledGraph, GraphSpec

__all__ = ["FAILURES", "graph_spec"]

FAILURES = {"look_up": 0}
"""How many more times ``look_up`` fails (the test sets it)."""


class ReplayState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    looked_up: bool


async def say_hello(state: ReplayState) -> dict[str, Any]:
    return {"messages": [AIMessage("Hello from the first node.", id=f"msg-{uuid4().hex}")]}


async def look_up(state: ReplayState) -> dict[str, Any]:
    if FAILURES["look_up"] > 0:
        FAILURES["look_up"] -= 1
        raise RuntimeError("the lookup failed")
    return {"looked_up": True}


def _build(model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any]) -> CompiledGraph:
    builder = StateGraph(ReplayState)
    builder.add_node("say_hello", say_hello)
    builder.add_node("look_up", look_up)
    builder.add_edge(START, "say_hello")
    builder.add_edge(START, "look_up")
    builder.add_edge("say_hello", END)
    builder.add_edge("look_up", END)
    return builder.compile(checkpointer=checkpointer, name="replayed")


def graph_spec() -> GraphSpec:
    return GraphSpec(name="replayed", build=_build, step_labels={}, consent_kinds={})
