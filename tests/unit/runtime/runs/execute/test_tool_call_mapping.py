"""``ChunkMapper`` and tool calls: an AI message's calls become ``tool_call`` events (a message
with calls and no text is no ``message``), a tool message a ``tool_result`` (cut past the limit,
its whole size stated); nothing is told twice, within a run or after a run it continues told it
(``said``, read back from the stored events with ``said_by``); token chunks are untouched."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage

from consentry.runtime.runs.execute._stream_mapping import (
    TOOL_RESULT_CHARS,
    ChunkMapper,
    Mapped,
    Said,
    said_by,
)
from consentry.schemas.events import ToolResultEvent
from consentry_graphs.registry import BUILTIN_GRAPHS
from tests.paths import DOCS

SPEC = BUILTIN_GRAPHS["tutor"]
WEATHER = {"name": "get_weather", "args": {"city": "Lisbon"}, "id": "call-1"}
TIME_ZONE = {"name": "get_time_zone", "args": {"city": "Lisbon"}, "id": "call-2"}


def _asking(*calls: dict[str, Any], text: str = "", message_id: str = "ai-1") -> AIMessage:
    return AIMessage(text, id=message_id, tool_calls=[{**c, "type": "tool_call"} for c in calls])


def _result(call_id: str, content: Any, *, name: str | None = "get_weather", **kw: Any) -> Any:
    return ToolMessage(content, tool_call_id=call_id, name=name, **kw)


def _told(mapped: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(event_type.model_fields["type"].default, fields) for event_type, fields in mapped]


def _updates(mapper: ChunkMapper, node: str, *messages: Any) -> list[tuple[str, dict[str, Any]]]:
    return _told(mapper.map("updates", {node: {"messages": list(messages)}}))


def _said(told: list[Mapped]) -> frozenset[Said]:
    """What a continuing run is given: ``said_by`` over the events as stored (JSON)."""
    stored = []
    for event_type, fields in told:
        event = event_type(thread_id="t", run_id="r", seq=1, ts="2026-01-01T12:00:00Z", **fields)
        stored.append((event.type, json.loads(event.model_dump_json())))
    return frozenset(s for kind, data in stored if (s := said_by(kind, data)) is not None)


def test_a_message_that_only_asks_for_tools_is_told_as_its_calls_alone() -> None:
    told = _updates(ChunkMapper(SPEC), "call_model", _asking(WEATHER, TIME_ZONE))

    assert told == [
        (
            "tool_call",
            {
                "tool_call_id": "call-1",
                "name": "get_weather",
                "args": {"city": "Lisbon"},
                "message_id": "ai-1",
            },
        ),
        (
            "tool_call",
            {
                "tool_call_id": "call-2",
                "name": "get_time_zone",
                "args": {"city": "Lisbon"},
                "message_id": "ai-1",
            },
        ),
    ]


def test_a_message_with_text_and_calls_is_told_first_then_its_calls() -> None:
    told = _updates(ChunkMapper(SPEC), "agent", _asking(WEATHER, text="Let me look."))

    assert [kind for kind, _ in told] == ["message", "tool_call"]
    assert told[0][1] == {"message_id": "ai-1", "content": "Let me look."}


def test_tool_messages_are_told_as_results_with_their_status() -> None:
    mapper = ChunkMapper(SPEC)
    _updates(mapper, "call_model", _asking(WEATHER, TIME_ZONE))

    told = _updates(
        mapper,
        "run_tools",
        _result("call-1", "Lisbon: sunny, 21 °C"),
        _result("call-2", "No time zone known.", name=None, status="error"),
        HumanMessage("not a tool's"),
    )

    assert told == [
        (
            "tool_result",
            {
                "tool_call_id": "call-1",
                "name": "get_weather",
                "status": "success",
                "content": "Lisbon: sunny, 21 °C",
                "content_chars": 20,
                "truncated": False,
            },
        ),
        (
            "tool_result",
            {
                "tool_call_id": "call-2",
                "name": "get_time_zone",  # the tool message named none: its call's
                "status": "error",
                "content": "No time zone known.",
                "content_chars": 19,
                "truncated": False,
            },
        ),
    ]


def test_a_long_result_is_cut_at_the_limit_and_states_its_whole_size() -> None:
    long = "x" * (TOOL_RESULT_CHARS + 5)

    ((kind, fields),) = _updates(ChunkMapper(SPEC), "run_tools", _result("call-1", long))

    assert kind == "tool_result"
    assert fields["content"] == "x" * TOOL_RESULT_CHARS
    assert (fields["content_chars"], fields["truncated"]) == (TOOL_RESULT_CHARS + 5, True)
    ((_, exact),) = _updates(ChunkMapper(SPEC), "run_tools", _result("c", long[:-5]))
    assert (exact["content_chars"], exact["truncated"]) == (TOOL_RESULT_CHARS, False)


def test_the_limit_is_the_mappers_and_content_blocks_are_told_as_json() -> None:
    blocks = [{"type": "text", "text": "sunny"}]

    ((_, fields),) = _updates(
        ChunkMapper(SPEC, tool_result_chars=10), "run_tools", _result("call-1", blocks)
    )

    whole = json.dumps(blocks)
    assert (fields["content"], fields["content_chars"]) == (whole[:10], len(whole))
    assert fields["truncated"] is True


def test_what_a_continued_run_told_is_not_told_again_but_an_edited_call_is() -> None:
    first = ChunkMapper(SPEC)
    asked = list(first.map("updates", {"call_model": {"messages": [_asking(WEATHER)]}}))
    answered = list(first.map("updates", {"run_tools": {"messages": [_result("call-1", "ok")]}}))
    retry = ChunkMapper(SPEC, said=_said([*asked, *answered]))

    assert _updates(retry, "call_model", _asking(WEATHER)) == []
    assert _updates(retry, "run_tools", _result("call-1", "ok")) == []
    edited = {**WEATHER, "args": {"city": "Oslo"}}
    assert [kind for kind, _ in _updates(retry, "review", _asking(edited))] == ["tool_call"]
    assert [kind for kind, _ in _updates(retry, "run_tools", _result("call-9", "ok"))] == [
        "tool_result"
    ]


def test_within_a_run_a_call_or_result_handed_on_again_is_told_once() -> None:
    mapper = ChunkMapper(SPEC)

    assert len(_updates(mapper, "call_model", _asking(WEATHER))) == 1
    assert _updates(mapper, "after_model", _asking(WEATHER)) == []
    assert len(_updates(mapper, "run_tools", _result("call-1", "ok"))) == 1
    assert _updates(mapper, "run_tools", _result("call-1", "ok")) == []


def test_parallel_tasks_of_one_node_are_each_told() -> None:
    """A node that ran once per call (``Send``) has a list of updates in its step."""
    chunk = {
        "tools": [
            {"messages": [_result("call-1", "sunny")]},
            {"messages": [_result("call-2", "UTC+00:00", name="get_time_zone")]},
        ]
    }

    told = _told(ChunkMapper(SPEC).map("updates", chunk))

    assert [(kind, f["tool_call_id"]) for kind, f in told] == [
        ("tool_result", "call-1"),
        ("tool_result", "call-2"),
    ]


def test_a_node_that_writes_one_message_not_in_a_list_is_told() -> None:
    chunk = {"call_model": {"messages": _asking(WEATHER)}}

    assert [kind for kind, _ in _told(ChunkMapper(SPEC).map("updates", chunk))] == ["tool_call"]


def test_a_call_without_an_id_is_not_told_and_tokens_of_a_call_are_none() -> None:
    mapper = ChunkMapper(SPEC)
    no_id = AIMessage("", id="ai-1")
    no_id.tool_calls = [{"name": "get_weather", "args": {}, "id": None, "type": "tool_call"}]
    chunk = AIMessageChunk(
        content="",
        id="ai-1",
        tool_call_chunks=[{"name": "get_weather", "args": "{}", "id": "c", "index": 0}],
    )

    assert _updates(mapper, "call_model", no_id) == []
    assert _told(mapper.map("messages", (chunk, {}))) == []


def test_the_limit_is_the_one_the_protocol_and_the_event_state() -> None:
    stated = f"{TOOL_RESULT_CHARS:,} characters"
    assert f"cut past **{stated}**" in (DOCS / "protocol.md").read_text(encoding="utf-8")
    assert f"past {stated}" in " ".join((ToolResultEvent.__doc__ or "").split())
