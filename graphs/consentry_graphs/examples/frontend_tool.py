"""A plain LangGraph graph that calls a tool of the page it talks to (AG-UI's frontend tools):
no model, no Consentry import.

Its input has a ``tools`` field, so the tools an AG-UI client declares (``RunAgentInput.tools``:
``name``, ``description``, ``parameters``) reach it (``docs/ag-ui.md``), and a ``context`` field
(``RunAgentInput.context``: ``description``, ``value``). It asks the first tool, with the
person's message as its ``text`` argument; the run then ends, the call unanswered, and the
page's answer comes back as a ``tool`` message of the next input, which it reports. Offered no
tool, it says so, with the context it was given, the ``page`` of its state (an input field
an AG-UI client sets through ``RunAgentInput.state``) and the pages it has seen (``seen``, whose
reducer adds what each input gives to what the state had).

    use_page_tool → END

Served with ``CONSENTRY_GRAPHS=page_tool=consentry_graphs.examples.frontend_tool:graph``.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict


class PageToolState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    tools: list[dict[str, Any]]
    context: list[dict[str, Any]]
    page: str
    seen: Annotated[list[str], operator.add]


def use_page_tool(state: PageToolState) -> dict[str, list[AnyMessage]]:
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        return {"messages": [AIMessage(f"The page answered: {last.text}")]}
    tools = state.get("tools") or []
    if not tools:
        given = "".join(f" {c['description']}: {c['value']}." for c in state.get("context") or [])
        if "page" in state:
            given += f" You are on {state['page']}."
        if state.get("seen"):
            given += f" Pages seen: {', '.join(state['seen'])}."
        return {"messages": [AIMessage(f"The page offered no tool to call.{given}")]}
    text = last.text if isinstance(last, HumanMessage) else ""
    call = {"name": tools[0]["name"], "args": {"text": text}, "id": f"call-{last.id}"}
    return {"messages": [AIMessage("", tool_calls=[call])]}


builder = StateGraph(PageToolState)
builder.add_node(use_page_tool)
builder.add_edge(START, "use_page_tool")
builder.add_edge("use_page_tool", END)

graph = builder.compile()
