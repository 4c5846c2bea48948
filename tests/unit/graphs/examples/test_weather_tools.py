"""The weather example on its own, without the server: plain LangGraph (no Consentry import), a
deterministic tool-calling model that calls only the tools bound to it, and ``ToolNode`` running
them; ``graph_spec`` builds the same graph with a given checkpointer."""

from __future__ import annotations

import ast
import inspect

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from consentry_graphs.examples import weather_tools
from consentry_graphs.examples.weather_tools import (
    WeatherChatModel,
    get_time_zone,
    get_weather,
    graph,
    graph_spec,
)


async def test_the_model_asks_for_the_tools_then_answers_from_their_results() -> None:
    state = await graph.ainvoke({"messages": [HumanMessage("Weather and time in Oslo?", id="h1")]})

    messages = state["messages"]
    assert [type(m).__name__ for m in messages] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "ToolMessage",
        "AIMessage",
    ]
    asked = messages[1]
    assert isinstance(asked, AIMessage)
    assert (asked.id, asked.text) == ("weather-1", "")
    assert [(c["id"], c["name"], c["args"]) for c in asked.tool_calls] == [
        ("call-1-0", "get_weather", {"city": "Oslo"}),
        ("call-1-1", "get_time_zone", {"city": "Oslo"}),
    ]
    assert [(m.tool_call_id, m.text) for m in messages[2:4]] == [
        ("call-1-0", "Oslo: snow, -3 °C"),
        ("call-1-1", "Oslo is at UTC+01:00"),
    ]
    assert (messages[4].id, messages[4].text) == (
        "weather-4",
        "Here is what I found. Oslo: snow, -3 °C. Oslo is at UTC+01:00.",
    )


async def test_a_failing_tool_is_an_error_result_the_model_answers_from() -> None:
    state = await graph.ainvoke({"messages": [HumanMessage("Weather in Atlantis?")]})

    failed = state["messages"][2]
    assert isinstance(failed, ToolMessage)
    assert failed.status == "error"
    assert "No forecast for Atlantis." in failed.text
    assert state["messages"][-1].text == (
        "Here is what I found. get_weather failed, so I cannot tell."
    )


async def test_without_a_tool_to_call_it_answers_at_once() -> None:
    state = await graph.ainvoke({"messages": [HumanMessage("Hello!")]})

    assert [m.text for m in state["messages"][1:]] == [
        "I can tell you the weather or the time zone of a city: ask me about one."
    ]


def test_the_model_calls_only_the_tools_bound_to_it() -> None:
    asked = WeatherChatModel().bind_tools([get_time_zone]).invoke("Weather and time in Tokyo?")

    assert [c["name"] for c in asked.tool_calls] == ["get_time_zone"]
    assert WeatherChatModel().invoke("Weather in Tokyo?").tool_calls == []


async def test_the_model_streams_its_calls_in_one_chunk_and_its_answer_word_by_word() -> None:
    model = WeatherChatModel().bind_tools([get_weather])

    calls = [c async for c in model.astream("Weather in Lisbon?")]
    answer = [
        c
        async for c in model.astream(
            [
                HumanMessage("Weather in Lisbon?"),
                AIMessage("", tool_calls=[{"name": "get_weather", "args": {}, "id": "c1"}]),
                ToolMessage("Lisbon: sunny, 21 °C", tool_call_id="c1"),
            ]
        )
    ]

    assert [c.tool_calls for c in calls if c.tool_calls] == [
        [{"name": "get_weather", "args": {"city": "Lisbon"}, "id": "call-1-0", "type": "tool_call"}]
    ]
    assert all(c.text == "" for c in calls)
    assert [c.text for c in answer if c.text] == [
        "Here ",
        "is ",
        "what ",
        "I ",
        "found. ",
        "Lisbon: ",
        "sunny, ",
        "21 ",
        "°C.",
    ]


def test_an_hourly_forecast_is_longer_than_a_tool_result_event_carries() -> None:
    assert len(get_weather.invoke({"city": "Lisbon", "hourly": True})) > 8000


async def test_graph_spec_builds_the_graph_with_the_servers_checkpointer() -> None:
    spec = graph_spec()
    saver = InMemorySaver()

    built = spec.build(WeatherChatModel(), saver)
    config = {"configurable": {"thread_id": "t1"}}
    await built.ainvoke({"messages": [HumanMessage("Time in Tokyo?")]}, config)

    assert (spec.name, dict(spec.consent_kinds)) == ("weather", {})
    assert spec.label_for("run_tools") == "Using tools"
    assert built.checkpointer is saver
    saved = await built.aget_state(config)
    assert saved.values["messages"][-1].text == "Here is what I found. Tokyo is at UTC+09:00."


def test_the_graph_imports_no_consentry_module_at_its_top() -> None:
    tree = ast.parse(inspect.getsource(weather_tools))
    imported = [node.module or "" for node in tree.body if isinstance(node, ast.ImportFrom)] + [
        alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names
    ]

    assert [name for name in imported if name.startswith("consentry")] == []
