"""LangGraph's documented "review tool calls" pattern, as its how-to guide writes it: a node
asks a person about the model's tool call with a raw ``interrupt()`` and routes with
``Command(goto=...)`` on the answer (``{"action": "continue"}``, ``{"action": "update", "data":
{new args}}`` or ``{"action": "feedback", "data": "text for the model"}``). No Consentry
import: Consentry serves it as a consent of kind ``interrupt`` whose answer is that JSON.

Served with ``CONSENTRY_GRAPHS=review=consentry_graphs.examples.review_tool_calls:graph``.

    call_llm → human_review_node → run_tool → call_llm → END
                                 ↘ call_llm (feedback)
"""

from __future__ import annotations

from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command, interrupt


@tool
def weather_search(city: str) -> str:
    """Search for the weather in a city."""
    return f"Sunny in {city}!"


class WeatherModel(BaseChatModel):
    """Deterministic: asks for ``weather_search`` (San Francisco, or a city named after
    ``city:`` in feedback), then answers with the tool's result."""

    @property
    def _llm_type(self) -> str:
        return "weather-model"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last, turn = messages[-1], len(messages)
        if isinstance(last, ToolMessage) and last.text.startswith("Sunny"):
            reply = AIMessage(f"The weather: {last.text}", id=f"answer-{turn}")
        else:
            city = "San Francisco"
            if isinstance(last, ToolMessage) and "city:" in last.text:
                city = last.text.split("city:", 1)[1].strip()
            reply = AIMessage(
                "",
                id=f"call-{turn}",
                tool_calls=[{"name": "weather_search", "args": {"city": city}, "id": f"ws-{turn}"}],
            )
        return ChatResult(generations=[ChatGeneration(message=reply)])


model = WeatherModel()


def call_llm(state: MessagesState) -> dict[str, list[BaseMessage]]:
    return {"messages": [model.invoke(state["messages"])]}


def route_after_llm(state: MessagesState) -> Literal["human_review_node", "__end__"]:
    last = state["messages"][-1]
    return "human_review_node" if isinstance(last, AIMessage) and last.tool_calls else "__end__"


def human_review_node(state: MessagesState) -> Command[Literal["call_llm", "run_tool"]]:
    last_message = state["messages"][-1]
    assert isinstance(last_message, AIMessage)
    tool_call = last_message.tool_calls[-1]
    human_review = interrupt({"question": "Is this correct?", "tool_call": tool_call})
    review_action = human_review["action"]
    review_data = human_review.get("data")
    if review_action == "continue":
        return Command(goto="run_tool")
    if review_action == "update":
        updated_message = AIMessage(
            content=last_message.content,
            id=last_message.id,  # replaces the model's message
            tool_calls=[{**tool_call, "args": review_data}],
        )
        return Command(goto="run_tool", update={"messages": [updated_message]})
    # feedback: told to the model as the tool's result
    tool_message = ToolMessage(
        content=str(review_data), name=tool_call["name"], tool_call_id=tool_call["id"]
    )
    return Command(goto="call_llm", update={"messages": [tool_message]})


def run_tool(state: MessagesState) -> dict[str, list[BaseMessage]]:
    last_message = state["messages"][-1]
    assert isinstance(last_message, AIMessage)
    results: list[BaseMessage] = [
        ToolMessage(
            content=weather_search.invoke(call["args"]), name=call["name"], tool_call_id=call["id"]
        )
        for call in last_message.tool_calls
    ]
    return {"messages": results}


builder = StateGraph(MessagesState)
builder.add_node(call_llm)
builder.add_node(run_tool)
builder.add_node(human_review_node)
builder.add_edge(START, "call_llm")
builder.add_conditional_edges("call_llm", route_after_llm)
builder.add_edge("run_tool", "call_llm")

graph = builder.compile()
