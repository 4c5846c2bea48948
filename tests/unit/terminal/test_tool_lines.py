"""``consentry chat`` prints one dim line per tool call and per tool result, like a step: the
call with its arguments, the result's first line (shortened, with the whole size when the line
shows only part of it); a failed tool says so."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

from consentry.schemas.events import (
    MessageEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from consentry.terminal.palette import Palette
from consentry.terminal.run_view import RunView

ENVELOPE: dict[str, Any] = {
    "thread_id": "t1",
    "run_id": "r1",
    "seq": 3,
    "ts": datetime(2026, 1, 1, tzinfo=UTC),
}


def _call(**fields: Any) -> ToolCallEvent:
    defaults = {"tool_call_id": "c1", "name": "get_weather", "message_id": "m1"}
    return ToolCallEvent(**ENVELOPE, **(defaults | fields))


def _result(content: str, **fields: Any) -> ToolResultEvent:
    defaults = {"tool_call_id": "c1", "name": "get_weather", "status": "success"}
    sized = {"content": content, "content_chars": len(content), "truncated": False}
    return ToolResultEvent(**ENVELOPE, **(defaults | sized | fields))


def _printed(*events: Any, colours: bool = False) -> str:
    out, err = io.StringIO(), io.StringIO()
    view = RunView(palette=Palette(colours), out=out, err=err, speaker="weather")
    for event in events:
        view.show(event)
    view.end_line()
    assert err.getvalue() == ""
    return out.getvalue()


def test_a_call_and_its_result_are_one_line_each() -> None:
    printed = _printed(_call(args={"city": "Tokyo", "hourly": True}), _result("Tokyo: rain, 14 °C"))

    assert printed == (
        '  · tool get_weather(city="Tokyo", hourly=true)\n  · get_weather → Tokyo: rain, 14 °C\n'
    )


def test_the_lines_are_dim() -> None:
    printed = _printed(_call(args={}), _result("ok"), colours=True)

    assert printed == "\x1b[2m  · tool get_weather()\x1b[0m\n\x1b[2m  · get_weather → ok\x1b[0m\n"


def test_a_long_or_many_lined_result_shows_its_start_and_its_whole_size() -> None:
    hourly = "\n".join(f"Lisbon, 0{h}:00: sunny, 21 °C" for h in range(3))
    long = "x" * 100

    printed = _printed(
        _result(hourly),
        _result(long[:90], content_chars=12_345, truncated=True),
    )

    assert printed.splitlines() == [
        "  · get_weather → Lisbon, 00:00: sunny, 21 °C (83 characters)",
        f"  · get_weather → {'x' * 79}… (12,345 characters)",
    ]


def test_long_arguments_are_shortened() -> None:
    (line,) = _printed(_call(args={"query": "y" * 200})).splitlines()

    assert line == f'  · tool get_weather(query="{"y" * 72}…)'


def test_a_failed_tool_says_so() -> None:
    failed = _result("Error: ValueError('No forecast for Atlantis.')", status="error")

    assert (
        _printed(failed)
        == "  · get_weather failed: Error: ValueError('No forecast for Atlantis.')\n"
    )


def test_a_tool_line_ends_the_answer_being_streamed_first() -> None:
    printed = _printed(
        TokenEvent(**ENVELOPE, message_id="m1", delta="Let me look."),
        _call(args={"city": "Oslo"}),
        MessageEvent(**ENVELOPE, message_id="m2", content="Snow."),
    )

    assert printed == ('weather> Let me look.\n  · tool get_weather(city="Oslo")\nweather> Snow.\n')
