"""A tool-calling chat in plain LangGraph: the model asks for tools, LangGraph's ``ToolNode`` runs
them, the model answers from their results. Nothing here imports Consentry (``graph_spec``
imports the registry only when it is called).

Served with ``CONSENTRY_GRAPHS=weather=consentry_graphs.examples.weather_tools:graph_spec`` (or
``...:graph``, the compiled graph, where compiled graphs are accepted). Each call and result
goes on the wire as ``tool_call`` and ``tool_result`` events and into the thread's tool calls
(``GET /v1/threads/{id}/tool-calls``); only the question and the answer are its transcript.

    call_model → run_tools → call_model → END
               → END (no tool asked)

The model is deterministic, so the same conversation always makes the same calls: asked about
the weather (``hourly``: hour by hour for two weeks, a long result) or the time zone of a city
(``in Lisbon``; Lisbon when none is named), it calls ``get_weather`` and/or ``get_time_zone``;
given their results, it answers with their first lines. A city it has no forecast for makes the
tool fail: ``ToolNode`` hands the model the error (a ``tool_result`` with status ``error``).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode

if TYPE_CHECKING:
    from consentry_graphs.registry import GraphSpec

__all__ = [
    "STEP_LABELS",
    "TOOLS",
    "WeatherChatModel",
    "build_weather_graph",
    "get_time_zone",
    "get_weather",
    "graph",
    "graph_spec",
]

FORECASTS: dict[str, tuple[str, int]] = {
    "Lisbon": ("sunny", 21),
    "Oslo": ("snow", -3),
    "Tokyo": ("rain", 14),
}
UTC_OFFSETS: dict[str, int] = {"Lisbon": 0, "Oslo": 1, "Tokyo": 9}


@tool
def get_weather(city: str, hourly: bool = False) -> str:
    """The weather in a city now, or (``hourly``) hour by hour for the next two weeks."""
    if city not in FORECASTS:
        raise ValueError(f"No forecast for {city}.")
    sky, degrees = FORECASTS[city]
    if not hourly:
        return f"{city}: {sky}, {degrees} °C"
    return "\n".join(
        f"{city}, day {day + 1}, {hour:02d}:00: {sky}, {degrees + hour % 5 - 2} °C"
        for day in range(14)
        for hour in range(24)
    )


@tool
def get_time_zone(city: str) -> str:
    """A city's offset from UTC."""
    if city not in UTC_OFFSETS:
        raise ValueError(f"No time zone known for {city}.")
    return f"{city} is at UTC{UTC_OFFSETS[city]:+03d}:00"


TOOLS: list[BaseTool] = [get_weather, get_time_zone]

_CITY = re.compile(r"\b(?:in|for|at)\s+([A-Z][a-zA-Z]+)")
_WORD = re.compile(r"\S+\s*")
_NO_TOOL = "I can tell you the weather or the time zone of a city: ask me about one."


def _usage(messages: Sequence[BaseMessage], answer: str) -> UsageMetadata:
    """Tokens counted as words, as the offline model does."""
    prompt = sum(len(m.text.split()) for m in messages)
    output = len(answer.split())
    return {"input_tokens": prompt, "output_tokens": output, "total_tokens": prompt + output}


class WeatherChatModel(BaseChatModel):
    """A deterministic tool-calling chat model (see the module docstring): a real LangChain chat
    model, so ``bind_tools``, ``invoke`` and streaming work as with any provider's."""

    @property
    def _llm_type(self) -> str:
        return "weather-tools-example"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The model calls only the tools it is given, as a provider's does."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _reply(self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        """The next message: tool calls for a question, an answer for the tools' results."""
        message_id = f"weather-{len(messages)}"
        if messages and isinstance(messages[-1], ToolMessage):
            return AIMessage(_answer(messages), id=message_id)
        question = next((m.text for m in reversed(messages) if isinstance(m, HumanMessage)), "")
        bound = {t["function"]["name"] for t in tools}
        calls = [c for c in _calls_for(question) if c["name"] in bound]
        for index, call in enumerate(calls):
            call["id"] = f"call-{len(messages)}-{index}"
        if not calls:
            return AIMessage(_NO_TOOL, id=message_id)
        return AIMessage("", tool_calls=calls, id=message_id)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._reply(messages, kwargs.get("tools", []))
        reply.usage_metadata = _usage(messages, reply.text)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _chunks(
        self, messages: list[BaseMessage], tools: Sequence[dict[str, Any]]
    ) -> Iterator[ChatGenerationChunk]:
        """Tool calls in one chunk; an answer word by word. The last chunk reports the usage."""
        reply = self._reply(messages, tools)
        usage = _usage(messages, reply.text)
        if reply.tool_calls:
            chunk = AIMessageChunk(
                content="",
                id=reply.id,
                tool_calls=reply.tool_calls,
                usage_metadata=usage,
            )
            yield ChatGenerationChunk(message=chunk)
            return
        words = _WORD.findall(reply.text)
        for i, word in enumerate(words):
            last = i == len(words) - 1
            chunk = AIMessageChunk(
                content=word, id=reply.id, usage_metadata=usage if last else None
            )
            yield ChatGenerationChunk(message=chunk)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages, kwargs.get("tools", [])):
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(messages, kwargs.get("tools", [])):
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


def _calls_for(question: str) -> list[ToolCall]:
    found = _CITY.search(question)
    city = found.group(1) if found else "Lisbon"
    lowered = question.lower()
    calls: list[ToolCall] = []
    if "weather" in lowered or "forecast" in lowered:
        args: dict[str, Any] = {"city": city}
        if "hourly" in lowered:
            args["hourly"] = True
        calls.append(ToolCall(name="get_weather", args=args, id=None))
    if "time" in lowered:
        calls.append(ToolCall(name="get_time_zone", args={"city": city}, id=None))
    return calls


def _answer(messages: Sequence[BaseMessage]) -> str:
    """The first line of each tool result since the model's last message."""
    results: list[str] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        if message.status == "error":
            results.insert(0, f"{message.name} failed, so I cannot tell")
        else:
            results.insert(0, message.text.split("\n", 1)[0])
    return "Here is what I found. " + " ".join(f"{r}." for r in results)


MODEL = WeatherChatModel().bind_tools(TOOLS)


async def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
    return {"messages": [await MODEL.ainvoke(state["messages"])]}


def route_after_call_model(state: MessagesState) -> Literal["run_tools", "__end__"]:
    last = state["messages"][-1]
    return "run_tools" if isinstance(last, AIMessage) and last.tool_calls else "__end__"


STEP_LABELS = {"call_model": "Thinking", "run_tools": "Using tools"}


def build_weather_graph(
    model: BaseChatModel | None = None, checkpointer: BaseCheckpointSaver[Any] | None = None
) -> CompiledStateGraph[MessagesState, None, MessagesState, MessagesState]:
    """The graph; it brings its own model (a server's ``model`` is not used)."""
    builder = StateGraph(MessagesState)
    builder.add_node("call_model", call_model)
    builder.add_node("run_tools", ToolNode(TOOLS, handle_tool_errors=True))
    builder.add_edge(START, "call_model")
    builder.add_conditional_edges("call_model", route_after_call_model)
    builder.add_edge("run_tools", "call_model")
    return builder.compile(checkpointer=checkpointer, name="weather")


graph = build_weather_graph()


def graph_spec() -> GraphSpec:
    """What ``CONSENTRY_GRAPHS=weather=consentry_graphs.examples.weather_tools:graph_spec``
    loads: a ``consentry_graphs.registry.GraphSpec`` (imported here, so the graph above stays
    plain LangGraph)."""
    from consentry_graphs.registry import GraphSpec

    return GraphSpec(
        name="weather", build=build_weather_graph, step_labels=STEP_LABELS, consent_kinds={}
    )
