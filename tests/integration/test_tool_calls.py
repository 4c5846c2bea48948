"""Tool calls on the wire, recorded apart: a graph whose model calls tools (the weather example,
served with CONSENTRY_GRAPHS) streams a ``tool_call`` per call and a ``tool_result`` per result,
stored in the event log like every durable event and in the thread's tool calls
(``GET /v1/threads/{id}/tool-calls``), never in its transcript, which keeps what the user and the
assistant said. A long result is cut with its whole size stated; a retry does not tell a call
twice; another owner's thread is not found."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
import pytest_asyncio
import sqlalchemy as sa

from consentry.runtime.runs.execute._stream_mapping import TOOL_RESULT_CHARS
from consentry.schemas.events import (
    Event,
    FinalEvent,
    MessageEvent,
    RunStartedEvent,
    StepEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from consentry.storage.tables import tool_calls, transcript
from consentry_graphs.examples.weather_tools import get_weather
from tests.integration import replayed_tool_call_graph
from tests.sse import assert_numbered, chat, kinds, parse_events

WEATHER = "weather=consentry_graphs.examples.weather_tools:graph_spec"
REPLAYED = "replayed_tools=tests.integration.replayed_tool_call_graph:graph_spec"
ALICE = {"Authorization": "Bearer ka"}
BOB = {"Authorization": "Bearer kb"}
API_KEYS = "ka=acme:alice,kb=acme:bob"

ASK_TOKYO = "What is the weather and the time zone in Tokyo?"
TOKYO_ANSWER = "Here is what I found. Tokyo: rain, 14 °C. Tokyo is at UTC+09:00."
ASK_OSLO = "And the weather in Oslo?"
OSLO_ANSWER = "Here is what I found. Oslo: snow, -3 °C."


def _tokens(text: str) -> list[str]:
    """The deltas the example's model streams an answer in (word by word)."""
    return re.findall(r"\S+\s*", text)


def _nothing_but(events: list[Event], event_type: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, event_type)]


def _fields(event: Event, *names: str) -> tuple[Any, ...]:
    return tuple(getattr(event, name) for name in names)


@pytest_asyncio.fixture
async def client(open_client: Callable[..., Any]) -> AsyncIterator[httpx.AsyncClient]:
    async with open_client(graphs={"weather": WEATHER.split("=", 1)[1]}) as app_client:
        yield app_client


async def _ask(
    client: httpx.AsyncClient, message: str, thread_id: str | None = None
) -> list[Event]:
    body: dict[str, Any] = {"message": message}
    body |= {"thread_id": thread_id} if thread_id else {"graph": "weather"}
    return await chat(client, body)


async def _tool_calls(client: httpx.AsyncClient, thread_id: str) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/threads/{thread_id}/tool-calls")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["thread_id"] == thread_id
    calls: list[dict[str, Any]] = body["tool_calls"]
    return calls


async def _rows(client: httpx.AsyncClient, table: sa.Table, thread_id: str) -> list[Any]:
    async with client.services.db.read() as conn:  # type: ignore[attr-defined]
        result = await conn.execute(
            sa.select(table).where(table.c.thread_id == thread_id).order_by(table.c.id)
        )
        return list(result)


async def test_a_tool_using_answer_streams_each_call_then_each_result_then_the_answer(
    client: httpx.AsyncClient,
) -> None:
    events = await _ask(client, ASK_TOKYO)

    assert kinds(events, tokens=True) == [
        "run_started",
        "step",
        "tool_call",
        "tool_call",
        "step",
        "tool_result",
        "tool_result",
        "step",
        *["token"] * len(_tokens(TOKYO_ANSWER)),
        "message",
        "final",
    ]
    assert_numbered(events, first=1)
    started, final = events[0], events[-1]
    assert isinstance(started, RunStartedEvent)
    assert isinstance(final, FinalEvent)
    assert (started.graph, started.trigger, final.reason) == ("weather", "message", "completed")
    assert [(s.node, s.label) for s in _nothing_but(events, StepEvent)] == [
        ("call_model", "Thinking"),
        ("run_tools", "Using tools"),
        ("call_model", "Thinking"),
    ]
    fields = ("tool_call_id", "name", "args", "message_id")
    assert [_fields(e, *fields) for e in _nothing_but(events, ToolCallEvent)] == [
        ("call-1-0", "get_weather", {"city": "Tokyo"}, "weather-1"),
        ("call-1-1", "get_time_zone", {"city": "Tokyo"}, "weather-1"),
    ]
    fields = ("tool_call_id", "name", "status", "content", "content_chars", "truncated")
    assert [_fields(e, *fields) for e in _nothing_but(events, ToolResultEvent)] == [
        ("call-1-0", "get_weather", "success", "Tokyo: rain, 14 °C", 18, False),
        ("call-1-1", "get_time_zone", "success", "Tokyo is at UTC+09:00", 21, False),
    ]
    tokens = _nothing_but(events, TokenEvent)
    assert {t.message_id for t in tokens} == {"weather-4"}  # the calls' message streamed no text
    assert "".join(t.delta for t in tokens) == TOKYO_ANSWER
    assert [_fields(m, "message_id", "content") for m in _nothing_but(events, MessageEvent)] == [
        ("weather-4", TOKYO_ANSWER)
    ]


async def test_the_stored_log_replays_the_tool_events_as_they_were_sent(
    client: httpx.AsyncClient,
) -> None:
    sent = await _ask(client, ASK_TOKYO)
    thread_id = sent[0].thread_id

    response = await client.get(f"/v1/threads/{thread_id}/stream")

    assert response.status_code == 200, response.text
    assert parse_events(response.text) == [e for e in sent if e.type != "token"]


async def test_the_threads_tool_calls_come_in_order_with_their_results_and_their_place(
    client: httpx.AsyncClient,
) -> None:
    first = await _ask(client, ASK_TOKYO)
    thread_id = first[0].thread_id
    second = await _ask(client, ASK_OSLO, thread_id)
    assert kinds(second) == [
        *["run_started", "step", "tool_call", "step", "tool_result", "step", "message", "final"]
    ]

    calls = await _tool_calls(client, thread_id)

    messages = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]
    tokyo_question, oslo_question = messages[0]["message_id"], messages[2]["message_id"]
    assert [(c["tool_call_id"], c["name"], c["args"], c["message_id"]) for c in calls] == [
        ("call-1-0", "get_weather", {"city": "Tokyo"}, "weather-1"),
        ("call-1-1", "get_time_zone", {"city": "Tokyo"}, "weather-1"),
        ("call-6-0", "get_weather", {"city": "Oslo"}, "weather-6"),
    ]
    assert [(c["status"], c["content"]) for c in calls] == [
        ("success", "Tokyo: rain, 14 °C"),
        ("success", "Tokyo is at UTC+09:00"),
        ("success", "Oslo: snow, -3 °C"),
    ]
    assert [(c["content_chars"], c["truncated"]) for c in calls] == [
        (18, False),
        (21, False),
        (17, False),
    ]
    assert [c["run_id"] for c in calls] == [first[0].run_id] * 2 + [second[0].run_id]
    assert [c["after_message_id"] for c in calls] == [tokyo_question, tokyo_question, oslo_question]
    for call in calls:
        assert call["created_at"] <= call["finished_at"]


async def test_the_transcript_keeps_only_what_the_user_and_the_assistant_said(
    client: httpx.AsyncClient,
) -> None:
    events = await _ask(client, ASK_TOKYO)
    thread_id = events[0].thread_id

    messages = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]

    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", ASK_TOKYO),
        ("assistant", TOKYO_ANSWER),
    ]
    assert messages[1]["message_id"] == "weather-4"  # not weather-1, which only asked for tools
    rows = await _rows(client, transcript, thread_id)
    assert [(r.role, r.content) for r in rows] == [("user", ASK_TOKYO), ("assistant", TOKYO_ANSWER)]


async def test_a_long_result_is_cut_with_its_whole_size_stated_on_the_wire_and_in_the_table(
    client: httpx.AsyncClient,
) -> None:
    whole = get_weather.invoke({"city": "Lisbon", "hourly": True})
    assert len(whole) > TOOL_RESULT_CHARS

    events = await _ask(client, "The hourly weather in Lisbon, please")

    assert kinds(events) == [
        *["run_started", "step", "tool_call", "step", "tool_result", "step", "message", "final"]
    ]
    (call,) = _nothing_but(events, ToolCallEvent)
    assert call.args == {"city": "Lisbon", "hourly": True}
    (result,) = _nothing_but(events, ToolResultEvent)
    assert (result.content, result.content_chars, result.truncated) == (
        whole[:TOOL_RESULT_CHARS],
        len(whole),
        True,
    )
    (listed,) = await _tool_calls(client, events[0].thread_id)
    assert (listed["content"], listed["content_chars"], listed["truncated"]) == (
        whole[:TOOL_RESULT_CHARS],
        len(whole),
        True,
    )
    (row,) = await _rows(client, tool_calls, events[0].thread_id)
    assert (len(row.content), row.content_chars, row.status) == (
        TOOL_RESULT_CHARS,
        len(whole),
        "success",
    )


async def test_a_failing_tool_is_a_result_with_status_error_and_the_model_answers(
    client: httpx.AsyncClient,
) -> None:
    events = await _ask(client, "What is the weather in Atlantis?")

    assert kinds(events) == [
        *["run_started", "step", "tool_call", "step", "tool_result", "step", "message", "final"]
    ]
    (result,) = _nothing_but(events, ToolResultEvent)
    assert (result.tool_call_id, result.name, result.status) == ("call-1-0", "get_weather", "error")
    assert "No forecast for Atlantis." in result.content
    (said,) = _nothing_but(events, MessageEvent)
    assert said.content == "Here is what I found. get_weather failed, so I cannot tell."
    (listed,) = await _tool_calls(client, events[0].thread_id)
    assert (listed["status"], listed["content"]) == ("error", result.content)


async def test_an_answer_without_tools_has_no_tool_events_and_no_tool_calls(
    client: httpx.AsyncClient,
) -> None:
    events = await _ask(client, "Hello!")

    assert kinds(events) == ["run_started", "step", "message", "final"]
    assert await _tool_calls(client, events[0].thread_id) == []


async def test_a_retry_does_not_tell_again_the_tool_call_the_failed_run_told(
    open_client: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed run's step stored ``ask_for_weather``'s writes (its tool call was told); the
    retry runs ``look_up`` again and LangGraph replays those writes: the call is not told (nor
    recorded) a second time, and its result completes it."""
    monkeypatch.setitem(replayed_tool_call_graph.FAILURES, "look_up", 1)
    name, path = REPLAYED.split("=", 1)
    async with open_client(graphs={name: path}) as client:
        failed = await chat(client, {"graph": name, "message": "Weather?"})
        assert kinds(failed) == ["run_started", "step", "step", "tool_call", "error", "final"]
        thread_id = failed[0].thread_id

        response = await client.post(f"/v1/threads/{thread_id}/retry")
        assert response.status_code == 200, response.text
        retried = parse_events(response.text)

        assert kinds(retried) == ["run_started", "step", "step", "step", "tool_result", "final"]
        steps = [s.node for s in _nothing_but(retried, StepEvent)]
        assert steps == ["ask_for_weather", "look_up", "run_tools"]  # the first one replayed
        (result,) = _nothing_but(retried, ToolResultEvent)
        assert (result.tool_call_id, result.content) == ("call-oslo", "Oslo: snow, -3 °C")
        calls = await _tool_calls(client, thread_id)
        assert [(c["tool_call_id"], c["run_id"], c["status"]) for c in calls] == [
            ("call-oslo", failed[0].run_id, "success")
        ]


async def test_another_owners_tool_calls_answer_like_a_thread_that_does_not_exist(
    open_client: Callable[..., Any],
) -> None:
    name, path = WEATHER.split("=", 1)
    async with open_client(graphs={name: path}, api_keys=API_KEYS) as client:
        response = await client.post(
            "/v1/chat", json={"graph": "weather", "message": ASK_TOKYO}, headers=ALICE
        )
        thread_id = parse_events(response.text)[0].thread_id

        theirs = await client.get(f"/v1/threads/{thread_id}/tool-calls", headers=BOB)
        nobodys = await client.get("/v1/threads/no-such-thread/tool-calls", headers=BOB)
        anonymous = await client.get(f"/v1/threads/{thread_id}/tool-calls")
        mine = await client.get(f"/v1/threads/{thread_id}/tool-calls", headers=ALICE)

    assert theirs.status_code == nobodys.status_code == 404
    assert theirs.json()["error"]["code"] == nobodys.json()["error"]["code"] == "thread_not_found"
    assert anonymous.status_code == 401
    assert mine.status_code == 200
    assert len(mine.json()["tool_calls"]) == 2
