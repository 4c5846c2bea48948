"""Raw ``interrupt()`` consents and reviewed tool calls in the web app, in real headless Chromium
against a real server process serving two plain LangGraph graphs (``CONSENTRY_GRAPHS``): one asks
``{"question": "Which city?"}`` with no schema (a free box: JSON, or else the text), the other
asks for an age with a ``response_schema`` (a form made from it). A card shows the value as JSON
and "No deadline", an empty answer is never sent, a misfit answer shows the server's errors and
the card stays, and the graph goes on with the answer, from the chat, from the inbox, and in a
conversation started with the graph picked in the app.

Tool calls reviewed by LangChain's human-in-the-loop middleware (kind ``tool_call``): a
``create_agent`` agent asks for two at once; the inbox links the review to its conversation,
where both are decided together in one request. Cards with every decision (edit among them) are
drawn by the app's own modules (``/web/consent-card.js``, ``/web/tool-call-card.js``), imported in
the page, as ``test_web_app_review.py`` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.system.browser import PHONE, WatchedPage
from tests.system.server import serve
from tests.system.web_steps import ask_graph, create_note, open_app, open_note, wait_for_message

GRAPHS = {
    "CONSENTRY_GRAPHS": "city=consentry_graphs.examples.ask_city:graph,"
    "age=consentry_graphs.examples.validate_age:builder,"
    "agent=consentry_graphs.examples.tool_review_agent:graph"
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("interrupts") / "c.db", env=GRAPHS) as base_url:
        yield base_url


def approval(api: httpx.Client, approval_id: str) -> dict[str, Any]:
    body: dict[str, Any] = api.get(f"/v1/approvals/{approval_id}").json()
    return body


def test_a_raw_interrupt_shows_its_value_and_is_answered_with_json_from_the_chat(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Trips", "Where next?")
    consent = ask_graph(api, "city", note)

    open_note(page, server, note)

    card = page.locator(f'#chat-log .consent-card[data-approval-id="{consent["approval_id"]}"]')
    expect(card).to_have_attribute("data-kind", "interrupt")
    expect(card.locator(".consent-title")).to_have_text("Which city?")
    expect(card.locator(".interrupt-value")).to_have_text('{\n  "question": "Which city?"\n}')
    expect(card.locator(".countdown")).to_have_text("No deadline")
    expect(card.locator("button")).to_have_text(["Answer"])  # no approve, no reject

    card.locator("button.answer").click()  # an empty box

    expect(card.locator(".answer-errors")).to_have_text("Type your answer first.")
    expect(card).to_have_attribute("data-state", "pending")
    assert approval(api, consent["approval_id"])["status"] == "pending", "nothing was sent"

    card.locator("textarea.answer-json").fill("Lisbon")  # text, sent as it is
    card.locator("button.answer").click()

    expect(page.locator("#chat-log .msg.assistant .text").last).to_have_text(
        "Booked a trip to Lisbon."
    )
    expect(card).to_have_attribute("data-state", "decided")
    expect(card.locator(".consent-status")).to_have_text("Answered.")
    expect(card.locator(".countdown")).to_be_hidden()
    decided = approval(api, consent["approval_id"])
    assert (decided["status"], decided["decided"]["value"]) == ("answered", "Lisbon")


def test_an_answer_that_misfits_the_schema_shows_why_and_the_card_stays_at_phone_width(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    page.set_viewport_size(PHONE)  # type: ignore[arg-type]
    note = create_note(api, "Birthday", "Party plans.")
    consent = ask_graph(api, "age", note)

    open_note(page, server, note)

    card = page.locator(f'#chat-log .consent-card[data-approval-id="{consent["approval_id"]}"]')
    expect(card.locator(".consent-title")).to_have_text("What is your age?")
    age = card.get_by_label("Your answer")  # a form from {"type": "integer", "minimum": 0, …}
    expect(age).to_have_attribute("type", "number")
    expect(age).to_have_attribute("step", "1")
    expect(card.locator(".field-hint")).to_have_text("A whole number from 0 to 150.")
    expect(card.locator(".required")).to_have_count(1)

    card.locator("button.answer").click()  # empty: said on the card, nothing sent
    expect(card.locator(".answer-errors")).to_have_text("Your answer: fill this in")
    watched.expect_http_status(422)
    age.fill("200")
    age.press("Enter")

    expect(card.locator(".answer-errors")).to_have_text("200 is greater than the maximum of 150")
    expect(card.locator(".consent-status")).to_contain_text("does not fit the schema")
    expect(card).to_have_attribute("data-state", "pending")
    expect(age).to_be_enabled()
    assert approval(api, consent["approval_id"])["status"] == "pending"

    age.fill("30")
    card.locator("button.answer").click()

    expect(page.locator("#chat-log .msg.assistant .text").last).to_have_text(
        "You are 30 years old."
    )
    expect(card).to_have_attribute("data-state", "decided")
    assert approval(api, consent["approval_id"])["decided"]["value"] == 30
    card.scroll_into_view_if_needed()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], "nothing sticks out at phone width"


def test_the_inbox_shows_the_value_and_answers_a_raw_interrupt(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Holidays", "Somewhere warm.")
    consent = ask_graph(api, "city", note)

    open_app(page, server, "#/inbox")

    card = page.locator(f'#inbox-view .consent-card[data-approval-id="{consent["approval_id"]}"]')
    expect(card.locator(".interrupt-value")).to_have_text('{\n  "question": "Which city?"\n}')
    expect(card.locator(".countdown")).to_have_text("No deadline")
    card.locator("textarea.answer-json").fill('"Porto"')
    card.locator("button.answer").click()

    expect(card.locator(".consent-status")).to_have_text(
        "Answered. The conversation goes on in the background."
    )
    wait_for_message(api, consent["thread_id"], "Booked a trip to Porto.")
    assert approval(api, consent["approval_id"])["status"] == "answered"


# ---- tool calls: cards drawn by the app's own modules ----

ARGS = {"to": "ada@example.com", "subject": "Trip", "cc": ["bob@example.com"]}


def tool_call(approval_id: str, name: str, args: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "approval_id": approval_id,
        "thread_id": "synthetic",
        "run_id": "synthetic-run",
        "kind": "tool_call",
        "title": f"Run {name}?",
        "proposal": {"name": name, "args": args, "description": f"{name} needs your review"},
        "allowed_decisions": ["approve", "edit", "reject", "respond"],
        "interrupt_id": "review-1",
        "expires_at": None,
        "created_at": "2026-12-01T10:00:00Z",
        **fields,
    }


def mount_tool_calls(page: Page, batch: list[dict[str, Any]], single: dict[str, Any]) -> None:
    """``batch`` in one ``toolCallBatch``, ``single`` alone, in the chat's log; what they send
    goes to ``window.sent``."""
    page.evaluate(
        """async ({ batch, single }) => {
          const { consentCard } = await import("/web/consent-card.js");
          const { toolCallBatch } = await import("/web/tool-call-card.js");
          const log = document.querySelector("#chat-log");
          window.sent = [];
          const group = toolCallBatch("review-1", {
            sendAll: async (decisions) => { window.sent.push(decisions); },
          });
          log.append(group);
          for (const consent of batch) {
            group.add(consentCard(consent, { batch: group, send: null }));
          }
          log.append(consentCard(single, {
            send: async (decision, extra) => {
              const { idempotencyKey, ...rest } = extra;
              window.sent.push({ decision, ...rest });
            },
          }));
        }""",
        {"batch": batch, "single": single},
    )


def sent(page: Page) -> list[Any]:
    result: list[Any] = page.evaluate("window.sent")
    return result


def test_tool_calls_show_their_arguments_and_a_review_is_decided_together_in_one_request(
    watched: WatchedPage, server: str
) -> None:
    page = watched.page
    open_app(page, server)
    email = tool_call("t-email", "send_email", ARGS)
    weather = tool_call("t-weather", "get_weather", {"city": "Lisbon"})
    delete = tool_call("t-delete", "delete_file", {"path": "/tmp/x"}, interrupt_id="review-2")

    mount_tool_calls(page, [email, weather], delete)

    card = page.locator('.consent-card[data-approval-id="t-email"]')
    expect(card.locator(".tool-call-name")).to_have_text("Tool send_email")
    expect(card.locator(".tool-args-table th")).to_have_text(["to", "subject", "cc"])
    expect(card.locator(".tool-args-table td")).to_have_text(
        ["ada@example.com", "Trip", '[\n  "bob@example.com"\n]']
    )
    expect(card.locator(".tool-description")).to_have_text("send_email needs your review")
    expect(card.locator(".countdown")).to_have_text("No deadline")
    buttons = card.locator(".consent-actions button")
    expect(buttons).to_have_text(["Approve", "Edit…", "Reject", "Respond…"])
    send_all = page.locator(".consent-batch button.batch-send")
    expect(send_all).to_have_text("Send decisions (0 of 2 chosen)")

    card.locator("button.approve").click()  # in a review of two, a button picks
    expect(card.locator("button.approve")).to_have_attribute("aria-pressed", "true")
    other = page.locator('.consent-card[data-approval-id="t-weather"]')
    other.locator("button.respond").click()
    send_all.click()  # the reply is empty: said, nothing sent
    expect(other.locator(".tool-respond .field-error")).to_have_text(
        "Write the reply the model gets instead of the tool's result."
    )
    assert sent(page) == []
    other.locator("textarea.tool-reply").fill("It is sunny in Lisbon.")
    expect(send_all).to_have_text("Send decisions")
    send_all.click()

    expect(card.locator(".consent-status")).to_have_text("Approved: the tool runs.")
    expect(other.locator(".consent-status")).to_have_text(
        "Replied: the model gets your reply; the tool does not run."
    )
    expect(send_all).to_be_hidden()
    reply = {"decision": "respond", "comment": "It is sunny in Lisbon."}
    assert sent(page) == [
        [{"approval_id": "t-email", "decision": "approve"}, {"approval_id": "t-weather", **reply}]
    ]

    alone = page.locator('.consent-card[data-approval-id="t-delete"]')
    alone.locator("button.edit").click()
    alone.locator("textarea.tool-edit-args").fill('["not", "an object"]')
    alone.locator("button.edit-send").click()
    expect(alone.locator(".tool-editor .field-error")).to_have_text(
        'The arguments must be a JSON object: {"name": value, …}.'
    )
    alone.locator("textarea.tool-edit-args").fill('{"path": "/tmp/y"}')
    alone.locator("button.edit-send").click()  # alone, a button sends at once

    expect(alone.locator(".consent-status")).to_have_text(
        "Approved with your arguments: the tool runs with them."
    )
    assert sent(page)[1:] == [{"decision": "edit", "edited": {"path": "/tmp/y"}}]


def test_a_review_of_two_tool_calls_is_linked_from_the_inbox_and_decided_together_in_its_chat(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Rome", "A trip in May.")
    body = {"graph": "agent", "note_id": note["note_id"], "message": "Plan a trip to Rome"}
    response = api.post("/v1/chat", json=body)
    assert response.status_code == 200, response.text
    thread_id = response.headers["X-Thread-Id"]
    review = api.get(f"/v1/threads/{thread_id}").json()["pending_consents"]
    assert [c["proposal"]["name"] for c in review] == ["get_weather", "send_email"]

    open_app(page, server, "#/inbox")

    notice = page.locator("#inbox-list .review-notice")
    expect(notice.locator(".consent-title")).to_have_text("2 tool calls to review together")
    expect(notice.locator(".review-call .tool-call-name")).to_have_text(
        ["Tool get_weather", "Tool send_email"]
    )
    expect(notice.locator("button")).to_have_count(0)  # decided in the conversation only
    notice.get_by_role("link", name="decide them in their conversation").click()

    expect(page.locator("#chat-context")).to_have_text("About “Rome”")
    batch = page.locator("#chat-log .consent-batch")
    expect(batch.locator(".consent-card")).to_have_count(2)
    weather, email = batch.locator('.consent-card[data-kind="tool_call"]').all()
    expect(weather.locator("td")).to_have_text(["Rome"])
    weather.locator("button.approve").click()
    email.locator("button.respond").click()
    email.locator("textarea.tool-reply").fill("Not sent: I will write to the team myself.")
    batch.locator("button.batch-send").click()

    expect(weather.locator(".consent-status")).to_have_text("Approved: the tool runs.")
    expect(email).to_have_attribute("data-state", "decided")
    expect(page.locator("#chat-send")).to_be_enabled()
    statuses = {c["approval_id"]: approval(api, c["approval_id"])["status"] for c in review}
    assert statuses == {review[0]["approval_id"]: "approved", review[1]["approval_id"]: "answered"}
    calls = api.get(f"/v1/threads/{thread_id}/tool-calls").json()["tool_calls"]
    results = {c["name"]: c["content"] for c in calls}
    assert results["send_email"] == "Not sent: I will write to the team myself."


def test_a_new_conversation_talks_to_the_graph_picked_and_its_question_is_answered(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Holidays", "Somewhere warm.")
    open_note(page, server, note)

    picker = page.get_by_label("Talk to")
    expect(picker).to_have_value("tutor")
    picker.select_option("city")
    expect(page.locator("#chat-input")).to_have_attribute(
        "placeholder", "Write to city… (Enter sends, Shift+Enter: new line)"
    )
    page.locator("#chat-input").fill("Plan a trip")
    page.locator("#chat-input").press("Enter")

    card = page.locator('#chat-log .consent-card[data-kind="interrupt"]')
    expect(card.locator(".consent-title")).to_have_text("Which city?")
    expect(picker).to_be_disabled()  # the conversation keeps its graph
    card.locator("textarea.answer-json").fill("Porto")
    card.locator("button.answer").click()

    expect(page.locator("#chat-log .msg.assistant .text").last).to_have_text(
        "Booked a trip to Porto."
    )
    [thread] = api.get("/v1/threads", params={"note_id": note["note_id"]}).json()["threads"]
    assert thread["graph"] == "city"
