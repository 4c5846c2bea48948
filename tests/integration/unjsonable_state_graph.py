"""A graph whose state holds what JSON has no word for, a ``NaN`` and the infinities (plain
LangGraph, one node):

    score_answer → END

Served with ``CONSENTRY_GRAPHS=`` :data:`SERVED`."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

__all__ = ["SERVED", "graph"]

SERVED = "scores=tests.integration.unjsonable_state_graph:graph"


class ScoreState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    score: float
    bounds: list[float]


def score_answer(state: ScoreState) -> dict[str, Any]:
    return {
        "messages": [AIMessage("Scored.")],
        "score": float("nan"),
        "bounds": [float("-inf"), float("inf")],
    }


_builder = StateGraph(ScoreState)
_builder.add_node(score_answer)
_builder.add_edge(START, "score_answer")
_builder.add_edge("score_answer", END)
graph = _builder.compile()
