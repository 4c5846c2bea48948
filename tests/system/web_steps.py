"""What a person does in the web app, and what the API says, for the browser tests of the app
(``test_web_app*.py``): each step waits on what the page shows, never on time."""

from __future__ import annotations

import time
from typing import Any

import httpx
from playwright.sync_api import Locator, Page, expect

from consentry.schemas.events import Event
from tests.sse import ASK_FOR_SUMMARY, QUESTION, parse_events

SUMMARY_HEADING = "## Summary of our discussion"


def create_note(api: httpx.Client, title: str, content: str) -> dict[str, Any]:
    projects = api.get("/v1/projects").json()["projects"]
    default = next(p for p in projects if p["is_default"])
    response = api.post(
        f"/v1/projects/{default['project_id']}/notes", json={"title": title, "content": content}
    )
    assert response.status_code == 201, response.text
    note: dict[str, Any] = response.json()
    return note


def ask_graph(api: httpx.Client, graph: str, note: dict[str, Any]) -> dict[str, Any]:
    """Start a conversation about ``note`` with ``graph`` over the API; the raw interrupt it
    waits for (a consent of kind ``interrupt``)."""
    body = {"graph": graph, "note_id": note["note_id"], "message": "Hi"}
    response = api.post("/v1/chat", json=body)
    assert response.status_code == 200, response.text
    thread_id = response.headers["X-Thread-Id"]
    [consent] = api.get(f"/v1/threads/{thread_id}").json()["pending_consents"]
    assert consent["kind"] == "interrupt"
    return dict(consent)


def chat_over_the_api(api: httpx.Client, body: dict[str, Any]) -> list[Event]:
    """A chat request over the API, answered: the events of its run."""
    response = api.post("/v1/chat", json=body)
    assert response.status_code == 200, response.text
    return parse_events(response.text)


def ask_for_a_summary_over_the_api(api: httpx.Client, note: dict[str, Any]) -> list[Event]:
    """Over the API, as a script would: a new conversation about ``note`` asks the tutor a
    question (``QUESTION``), then to add a summary of it to the note (the tutor summarises no
    conversation in which nothing was discussed); the summary run's events, which end with its
    ``consent`` and ``final``."""
    about = {"note_id": note["note_id"]}
    answered = chat_over_the_api(api, {**about, "message": QUESTION})
    final = answered[-1]
    assert (final.type, getattr(final, "reason", None)) == ("final", "completed"), answered
    thread = {**about, "thread_id": final.thread_id}
    events = chat_over_the_api(api, {**thread, "message": ASK_FOR_SUMMARY})
    assert [e.type for e in events[-2:]] == ["consent", "final"], events
    return events


def wait_for_message(api: httpx.Client, thread_id: str, text: str) -> None:
    """The thread's background run said ``text`` (polled, with a deadline)."""
    deadline = time.monotonic() + 30
    path = f"/v1/threads/{thread_id}/messages"
    while text not in [m["content"] for m in api.get(path).json()["messages"]]:
        assert time.monotonic() < deadline, f"{thread_id} never said {text!r}"
        time.sleep(0.05)


def versions_of(api: httpx.Client, note_id: str) -> list[dict[str, Any]]:
    versions: list[dict[str, Any]] = api.get(f"/v1/notes/{note_id}/versions").json()["versions"]
    return versions


def open_app(page: Page, base_url: str, route: str = "") -> None:
    page.goto(f"{base_url}/{route}")
    expect(page.locator("#project-select")).not_to_have_value("")  # the notes are loaded
    # and the chat shows its conversation (or none): nothing clears its log any more
    expect(page.locator("#chat-log[data-shown]")).to_have_count(1)


def open_note(page: Page, base_url: str, note: dict[str, Any]) -> None:
    open_app(page, base_url)
    page.locator(f'#note-list li[data-note-id="{note["note_id"]}"] button').click()
    expect(page.locator("#note-version")).to_have_text(f"Version {note['version']}")
    expect(page.locator("#chat-context")).to_have_text(f"About “{note['title']}”")
    expect(page.locator("#chat-log[data-shown]")).to_have_count(1)  # its conversation is shown


def send(page: Page, message: str) -> None:
    page.locator("#chat-input").fill(message)
    page.locator("#chat-input").press("Enter")


def ask_a_question(page: Page, question: str) -> Locator:
    """Send a question; the answer, once its run ended."""
    send(page, question)
    answer = page.locator("#chat-log .msg.assistant .text").last
    expect(answer).to_contain_text("I'm the offline model")
    expect(page.locator("#chat-send")).to_be_enabled()
    return answer


def ask_for_a_summary(page: Page, *, discussed: bool = False) -> Locator:
    """Ask the tutor to add a summary of the conversation to the open note; its pending consent
    card. The tutor summarises no conversation in which nothing was discussed: unless the
    conversation already ``discussed`` something, a question (``QUESTION``) is asked first."""
    if not discussed:
        ask_a_question(page, QUESTION)
    send(page, ASK_FOR_SUMMARY)
    card = page.locator("#chat-log .consent-card")
    expect(card).to_have_attribute("data-kind", "note_edit")
    expect(page.locator("#chat-send")).to_be_enabled()  # the run ended, waiting for consent
    return card


def note_id_open_in(page: Page) -> str:
    note_id = page.locator('#note-list li:has(button[aria-current="page"])').get_attribute(
        "data-note-id"
    )
    assert note_id
    return note_id
