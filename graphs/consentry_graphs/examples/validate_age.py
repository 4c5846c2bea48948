"""LangGraph's "validate human input" pattern, with the answer's JSON Schema given to
``interrupt()`` (``response_schema``): the server refuses an answer that does not fit (422, the
consent stays pending), and the node still checks the value and asks again when it is wrong.
No Consentry import.

Served with ``CONSENTRY_GRAPHS=age=consentry_graphs.examples.validate_age:builder`` (a
``StateGraph`` builder: the server compiles it with its checkpointer).

    get_age → greet → END
"""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from typing_extensions import TypedDict

AGE_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": 150}


class AgeState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    age: int


def get_age(state: AgeState) -> dict[str, int]:
    prompt = "What is your age?"
    while True:
        answer = interrupt({"question": prompt}, response_schema=AGE_SCHEMA)
        if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer <= 150:
            return {"age": answer}
        prompt = f"'{answer}' is not a valid age. What is your age?"


def greet(state: AgeState) -> dict[str, list[AnyMessage]]:
    return {"messages": [AIMessage(f"You are {state['age']} years old.")]}


builder = StateGraph(AgeState)
builder.add_node(get_age)
builder.add_node(greet)
builder.add_edge(START, "get_age")
builder.add_edge("get_age", "greet")
builder.add_edge("greet", END)
