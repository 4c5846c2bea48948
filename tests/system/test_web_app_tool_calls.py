"""Tool calls in the web app, in real headless Chromium against a real server process serving the
weather example (``CONSENTRY_GRAPHS``): each call is a quiet line in the chat, in its place
between the messages, that opens to show its arguments and its result (a cut result says how
long the whole was); live as the run streams, and the same after a reload."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from consentry_graphs.examples.weather_tools import get_weather
from tests.sse import parse_events
from tests.system.browser import WatchedPage
from tests.system.server import serve
from tests.system.web_steps import create_note, open_note, send

WEATHER = {"CONSENTRY_GRAPHS": "weather=consentry_graphs.examples.weather_tools:graph_spec"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("tools") / "c.db", env=WEATHER) as base_url:
        yield base_url


def _chat_log(page: Page) -> list[str]:
    """The chat's messages (role and text) and tool lines (summary and state), in order (not
    its step lines, which only a live run shows)."""
    items: list[str] = page.locator("#chat-log > .msg, #chat-log > details.tool").evaluate_all(
        """(items) => items.map((item) => item.matches("details.tool")
            ? `tool ${item.querySelector(".tool-summary").textContent} `
              + item.querySelector(".tool-state").textContent
            : `${item.classList[1]}: ${item.querySelector(".text")?.textContent.trim() ?? ""}`)"""
    )
    return items


def _weather_thread(api: httpx.Client, note: dict[str, Any], message: str) -> None:
    """A conversation about ``note`` with the weather graph, started through the API."""
    body = {"graph": "weather", "note_id": note["note_id"], "message": message}
    response = api.post("/v1/chat", json=body)
    assert response.status_code == 200, response.text
    assert parse_events(response.text)[-1].reason == "completed"  # type: ignore[union-attr]


def test_tool_calls_are_quiet_lines_in_their_place_that_open_to_their_arguments_and_result(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Travel", "Tokyo in spring.")
    _weather_thread(api, note, "What is the weather in Tokyo?")

    open_note(page, server, note)

    expect(page.locator("#chat-log details.tool")).to_have_count(1)
    assert _chat_log(page) == [
        "user: What is the weather in Tokyo?",
        'tool get_weather(city: "Tokyo") done',
        "assistant: Here is what I found. Tokyo: rain, 14 °C.",
    ]
    line = page.locator("#chat-log details.tool")
    expect(line.locator(".tool-args")).not_to_be_visible()  # quiet until opened
    line.locator("summary").click()
    expect(line.locator(".tool-args")).to_have_text('{\n  "city": "Tokyo"\n}')
    expect(line.locator(".tool-result pre")).to_have_text("Tokyo: rain, 14 °C")
    expect(line.locator(".tool-cut")).to_have_text("")

    send(page, "And the time zone in Oslo?")

    expect(page.locator("#chat-log .msg.assistant")).to_have_count(2)
    expect(page.locator("#chat-send")).to_be_enabled()
    live = _chat_log(page)
    assert live[3:] == [
        "user: And the time zone in Oslo?",
        'tool get_time_zone(city: "Oslo") done',
        "assistant: Here is what I found. Oslo is at UTC+01:00.",
    ]

    page.reload()

    expect(page.locator("#chat-log .msg.assistant")).to_have_count(2)
    expect(page.locator("#chat-log details.tool")).to_have_count(2)
    assert _chat_log(page) == live


def test_a_cut_result_says_how_long_the_whole_was_and_a_failed_tool_says_so(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Forecasts", "Hour by hour.")
    whole = get_weather.invoke({"city": "Lisbon", "hourly": True})
    _weather_thread(api, note, "Hello!")
    open_note(page, server, note)
    expect(page.locator("#chat-log .msg.assistant")).to_have_count(1)

    send(page, "The hourly weather in Lisbon, please")

    line = page.locator("#chat-log details.tool").last
    expect(line).to_have_attribute("data-status", "success")
    line.locator("summary").click()
    expect(line.locator(".tool-cut")).to_have_text(
        f"Only the first 8,000 of {len(whole):,} characters are kept."
    )
    assert line.locator(".tool-result pre").text_content() == whole[:8000]
    expect(page.locator("#chat-send")).to_be_enabled()

    send(page, "What is the weather in Atlantis?")

    failed = page.locator("#chat-log details.tool").last
    expect(failed).to_have_attribute("data-status", "error")
    expect(failed.locator(".tool-state")).to_have_text("failed")
    expect(page.locator("#chat-log .msg.assistant .text").last).to_have_text(
        "Here is what I found. get_weather failed, so I cannot tell."
    )
