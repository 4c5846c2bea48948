"""A yes/no question in the web app, in real headless Chromium against a real server process: a
raw ``interrupt()`` whose ``response_schema`` is ``{"type": "boolean"}``
(``tests/system/yes_no_graph.py``) is its question in words with a Yes and a No button, each
sending its answer, from the chat and from the inbox; what else the graph sent is folded away as
JSON. Other schemas keep their form (``test_web_app_interrupts.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.system.browser import WatchedPage
from tests.system.server import serve
from tests.system.web_steps import ask_graph, create_note, open_app, open_note, wait_for_message
from tests.system.yes_no_graph import KEPT, QUESTION, SENT

GRAPHS = {"CONSENTRY_GRAPHS": "confirm=tests.system.yes_no_graph:graph"}
SENT_VALUE = {"question": QUESTION, "report": "weekly.pdf"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("yes-no") / "c.db", env=GRAPHS) as base_url:
        yield base_url


def ask(api: httpx.Client, note: dict[str, Any]) -> dict[str, Any]:
    """A conversation about ``note`` with the yes/no graph: the question it waits for."""
    consent = ask_graph(api, "confirm", note)
    assert consent["response_schema"] == {"type": "boolean"}
    return consent


def answers_recorded(api: httpx.Client, thread_id: str) -> list[tuple[str, Any]]:
    """The thread's audit: each decision and the value it gave."""
    trail = api.get(f"/v1/threads/{thread_id}/audit").json()["records"]
    return [
        (r["data"]["decision"], r["data"]["value"])
        for r in trail
        if r["action"] == "consent_decided"
    ]


def test_a_yes_no_question_is_two_buttons_and_yes_resumes_the_graph_with_true(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Weekly report", "Due on Friday.")
    consent = ask(api, note)

    open_note(page, server, note)

    card = page.locator(f'#chat-log .consent-card[data-approval-id="{consent["approval_id"]}"]')
    expect(card.locator(".consent-title")).to_have_text(QUESTION)  # the question, as its title
    expect(card.get_by_role("button")).to_have_text(["Yes", "No"])
    expect(card.locator("input, textarea")).to_have_count(0)  # no checkbox, no answer box
    expect(card.locator(".interrupt-question")).to_have_count(0)  # said once, in the title
    sent = card.locator("details.interrupt-details")
    expect(sent.locator(".interrupt-value")).to_be_hidden()  # the rest of the value: folded
    sent.locator("summary").click()
    expect(sent.locator(".interrupt-value")).to_have_text(json.dumps(SENT_VALUE, indent=2))
    expect(page.get_by_label("Talk to")).to_have_value("confirm")  # the graph it talks to

    card.get_by_role("button", name="Yes").click()

    expect(page.locator("#chat-log .msg.assistant .text").last).to_have_text(SENT)
    expect(card).to_have_attribute("data-state", "decided")
    expect(card.locator(".consent-status")).to_have_text("Answered.")
    expect(card.get_by_role("button", name="Yes")).to_have_attribute("aria-pressed", "true")
    expect(card.get_by_role("button", name="No")).to_have_attribute("aria-pressed", "false")
    approval = api.get(f"/v1/approvals/{consent['approval_id']}").json()
    assert (approval["status"], approval["decided"]["value"]) == ("answered", True)
    assert answers_recorded(api, consent["thread_id"]) == [("answer", True)]

    page.get_by_role("button", name="New conversation").click()  # talks to the graph picked
    expect(page.get_by_label("Talk to")).to_have_value("tutor")
    expect(page.get_by_label("Talk to")).to_be_enabled()


def test_no_from_the_inbox_resumes_the_graph_with_false(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Monthly report", "Due at the end of the month.")
    consent = ask(api, note)

    open_app(page, server, "#/inbox")
    card = page.locator(f'#inbox-view .consent-card[data-approval-id="{consent["approval_id"]}"]')
    expect(card.get_by_role("button")).to_have_text(["Yes", "No"])
    card.get_by_role("button", name="No").click()

    expect(card.locator(".consent-status")).to_have_text(
        "Answered. The conversation goes on in the background."
    )
    wait_for_message(api, consent["thread_id"], KEPT)
    assert answers_recorded(api, consent["thread_id"]) == [("answer", False)]


def mount_interrupt(page: Page, consent: dict[str, Any]) -> Any:
    """Draw an interrupt's card with the app's own module into the chat; what it sends goes to
    ``window.sent``."""
    page.evaluate(
        """async (consent) => {
          const { consentCard } = await import("/web/consent-card.js");
          window.sent = window.sent ?? [];
          document.querySelector("#chat-log").append(consentCard(consent, {
            send: async (decision, { idempotencyKey, ...extra }) => {
              window.sent.push({ decision, ...extra });
              return null;
            },
          }));
        }""",
        consent,
    )
    return page.locator(f'#chat-log .consent-card[data-approval-id="{consent["approval_id"]}"]')


def synthetic(approval_id: str, value: Any, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "approval_id": approval_id,
        "thread_id": "synthetic",
        "kind": "interrupt",
        "title": "The graph asks for an answer",
        "proposal": {"value": value},
        "value": value,
        "response_schema": schema,
        "allowed_decisions": ["answer"],
        "expires_at": None,
    }


def test_the_question_is_the_values_text_and_other_values_are_folded_json(
    watched: WatchedPage, server: str
) -> None:
    """The question comes from a string value or its ``question``, ``message`` or ``text``
    field; a value without one is shown folded as JSON; a schema other than one boolean keeps
    its form."""
    page = watched.page
    open_app(page, server)
    boolean = {"type": "boolean"}

    as_text = mount_interrupt(page, synthetic("as-text", "Delete the old drafts?", boolean))
    as_field = mount_interrupt(page, synthetic("as-field", {"text": "Publish it?"}, boolean))
    with_more = mount_interrupt(
        page, synthetic("with-more", {"message": "Retry the upload?", "attempt": 2}, boolean)
    )
    no_words = mount_interrupt(page, synthetic("no-words", [1, 2], boolean))
    a_number = mount_interrupt(
        page, synthetic("a-number", {"question": "How many?"}, {"type": "integer"})
    )

    expect(as_text.locator(".interrupt-question")).to_have_text("Delete the old drafts?")
    expect(as_text.locator("details")).to_have_count(0)  # nothing more than the question
    expect(as_field.locator(".interrupt-question")).to_have_text("Publish it?")
    expect(as_field.locator("details")).to_have_count(0)
    expect(with_more.locator(".interrupt-question")).to_have_text("Retry the upload?")
    expect(with_more.locator("details .interrupt-value")).to_be_hidden()
    expect(no_words.locator(".interrupt-question")).to_have_count(0)
    expect(no_words.locator("details > summary")).to_have_text("What the graph sent, as JSON")
    for card in (as_text, as_field, with_more, no_words):
        expect(card.get_by_role("button")).to_have_text(["Yes", "No"])
    expect(a_number.locator(".interrupt-value")).to_be_visible()  # today's card: JSON, a form
    expect(a_number.get_by_label("Your answer")).to_have_attribute("type", "number")
    expect(a_number.get_by_role("button")).to_have_text(["Answer"])

    as_field.get_by_role("button", name="No").click()
    expect(as_field.locator(".consent-status")).to_have_text("Answered.")
    assert page.evaluate("window.sent") == [{"decision": "answer", "value": False}]
