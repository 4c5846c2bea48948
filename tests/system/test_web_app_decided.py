"""What a consent card shows once it is decided, in real headless Chromium against a real server
process: in the inbox it leaves "Waiting for your decision" for "Decided", showing what was
written (the person's edit, not the proposal), and is listed there again after a reload; every
inbox card links to its conversation; in the chat, a card decided elsewhere shows what was
written too, and an edit being typed there is kept. Fixtures and steps as in
``test_web_app.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.sse import ASK_FOR_SUMMARY, QUESTION
from tests.system.browser import WatchedPage
from tests.system.server import serve
from tests.system.web_steps import (
    ask_for_a_summary,
    ask_for_a_summary_over_the_api,
    create_note,
    open_app,
    open_note,
    versions_of,
)

MINE = "Before the summary.\n\nMy own words: spacing beats cramming."
LIVE_MS = 3_000
"""How soon a change made elsewhere shows (as in ``test_web_app_live.py``)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("web-decided") / "c.db") as base_url:
        yield base_url


def ask_over_the_api(api: httpx.Client, note: dict[str, Any]) -> Any:
    """The tutor asked a question about ``note`` and then to add a summary to it, over the API:
    the summary's consent event."""
    return ask_for_a_summary_over_the_api(api, note)[-2]


def inbox_card(page: Page, where: str, approval_id: str) -> Locator:
    return page.locator(f'{where} .consent-card[data-approval-id="{approval_id}"]')


def open_note_following_approvals(page: Page, base_url: str, note: dict[str, Any]) -> None:
    """``open_note``, once the page follows the approvals stream (its response has begun), so a
    decision made elsewhere from then on reaches it."""
    with page.expect_response(lambda response: response.url.endswith("/v1/approvals/stream")):
        open_note(page, base_url, note)


def test_a_card_decided_in_the_inbox_moves_to_decided_shows_the_edit_and_links_its_chat(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Inbox edit", "Before the summary.")
    consent = ask_over_the_api(api, note)
    open_app(page, server, "#/inbox")
    waiting = inbox_card(page, "#inbox-list", consent.approval_id)
    decided = inbox_card(page, "#inbox-decided-list", consent.approval_id)
    expect(waiting.locator(".consent-title")).to_have_text(
        "Add a summary to your note “Inbox edit”?"
    )
    expect(decided).to_have_count(0)

    waiting.get_by_role("button", name="Edit…").click()
    waiting.locator("textarea.edit-content").fill(MINE)
    waiting.get_by_role("button", name="Approve my edit").click()

    expect(decided.locator(".consent-status")).to_have_text(
        "Approved with your edit: the tutor carries it out now."
    )
    expect(waiting).to_have_count(0)  # no longer waiting for a decision
    expect(page.locator("#inbox-decided")).to_be_visible()
    expect(page.locator("#inbox-decided h2")).to_have_text("Decided")
    expect(decided.locator(".consent-status")).to_be_focused()  # the keyboard's place moved too
    expect(decided.locator(".diff figcaption")).to_have_text(
        "Approved with an edit for “Inbox edit”: 2 lines added, 0 removed"
    )
    expect(decided.locator(".diff .diff-line")).to_have_text(
        [" Before the summary.", "+", "+My own words: spacing beats cramming."]
    )

    page.reload()  # listed again, as the server has it
    expect(decided.locator(".consent-status")).to_have_text("You approved this with an edit.")
    expect(decided.locator(".diff .diff-line.add")).to_have_text(
        ["+", "+My own words: spacing beats cramming."]
    )
    expect(waiting).to_have_count(0)
    decided.get_by_role("link", name="Open its conversation").click()

    expect(page).to_have_url(re.compile(r"#/notes$"))
    expect(page.locator("#chat-context")).to_have_text("About “Inbox edit”")
    expect(page.locator("#chat-log .msg.user .text")).to_have_text([QUESTION, ASK_FOR_SUMMARY])
    expect(page.locator("#note-version")).to_have_text("Version 2")
    expect(page.locator("#note-content")).to_have_value(MINE)
    assert [v["content"] for v in versions_of(api, note["note_id"])] == [
        "Before the summary.",
        MINE,
    ]


def test_every_waiting_card_links_to_its_conversation(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    first = create_note(api, "Inbox first", "First note.")
    second = create_note(api, "Inbox second", "Second note.")
    asked = [ask_over_the_api(api, note) for note in (first, second)]
    open_app(page, server, "#/inbox")
    cards = [inbox_card(page, "#inbox-list", consent.approval_id) for consent in asked]
    for card in cards:
        expect(card.get_by_role("link", name="Open its conversation")).to_be_visible()

    cards[0].get_by_role("link", name="Open its conversation").click()

    expect(page.locator("#chat-context")).to_have_text("About “Inbox first”")
    card = page.locator(f'#chat-log .consent-card[data-approval-id="{asked[0].approval_id}"]')
    expect(card).to_have_attribute("data-state", "pending")  # decided there, in its conversation
    card.get_by_role("button", name="Approve").click()
    expect(page.locator("#note-version")).to_have_text("Version 2")


def test_a_card_decided_through_the_api_moves_to_decided_in_the_open_inbox(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    """Decided elsewhere while the inbox is open: the approvals stream moves it, with the edit
    written; a rejected one says nothing was written."""
    page = watched.page
    edited_note = create_note(api, "Inbox elsewhere", "Before the summary.")
    rejected_note = create_note(api, "Inbox rejected", "Keep me.")
    open_app(page, server, "#/inbox")
    expect(page.locator("#inbox-list > *").first).to_be_visible()  # loaded
    edited, rejected = (ask_over_the_api(api, note) for note in (edited_note, rejected_note))
    for consent in (edited, rejected):  # shown as asked: the approvals stream is followed
        expect(inbox_card(page, "#inbox-list", consent.approval_id)).to_be_visible(timeout=LIVE_MS)

    for consent, body in (
        (edited, {"decision": "edit", "edited": {"content": MINE}}),
        (rejected, {"decision": "reject"}),
    ):
        response = api.post(f"/v1/approvals/{consent.approval_id}/decision", json=body)
        assert response.status_code == 202, response.text

    card = inbox_card(page, "#inbox-decided-list", edited.approval_id)
    expect(card.locator(".consent-status")).to_have_text(
        "You approved this with an edit elsewhere."
    )
    expect(card.locator(".diff .diff-line.add")).to_have_text(
        ["+", "+My own words: spacing beats cramming."]
    )
    card = inbox_card(page, "#inbox-decided-list", rejected.approval_id)
    expect(card.locator(".consent-status")).to_have_text(
        "You rejected this elsewhere: nothing was changed."
    )
    expect(card.locator(".not-written > summary")).to_have_text("Proposed, not written")
    expect(card.locator(".not-written .diff")).to_be_hidden()
    card.locator(".not-written > summary").click()  # what was proposed, on request
    expect(card.locator(".not-written .diff-line.same")).to_have_text([" Keep me."])
    for consent in (edited, rejected):
        expect(inbox_card(page, "#inbox-list", consent.approval_id)).to_have_count(0)


def test_a_card_decided_elsewhere_shows_the_edit_written_in_the_chat(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Chat elsewhere", "Before the summary.")
    open_note_following_approvals(page, server, note)
    card = ask_for_a_summary(page)
    approval_id = card.get_attribute("data-approval-id")
    page.locator("#chat-input").focus()  # typing the next message meanwhile

    body = {"decision": "edit", "edited": {"content": MINE}}
    response = api.post(f"/v1/approvals/{approval_id}/decision", json=body)
    assert response.status_code == 202, response.text

    expect(card.locator(".consent-status")).to_have_text(
        "You approved this with an edit elsewhere.", timeout=LIVE_MS
    )
    expect(page.locator("#note-version")).to_have_text("Version 2")  # the run, joined
    expect(card.locator(".diff figcaption")).to_have_text(
        "Written to “Chat elsewhere” as version 2: 2 lines added, 0 removed"
    )
    expect(card.locator(".diff .diff-line.add")).to_have_text(
        ["+", "+My own words: spacing beats cramming."]
    )
    expect(page.locator("#chat-input")).to_be_focused()  # news from elsewhere took no focus


def test_an_edit_being_typed_when_someone_else_decides_stays_to_copy(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Typing elsewhere", "Before the summary.")
    open_note_following_approvals(page, server, note)
    card = ask_for_a_summary(page)
    card.get_by_role("button", name="Edit…").click()
    area = card.locator("textarea.edit-content")
    area.fill(MINE)

    response = api.post(
        f"/v1/approvals/{card.get_attribute('data-approval-id')}/decision",
        json={"decision": "approve"},
    )
    assert response.status_code == 202, response.text

    expect(card.locator(".consent-status")).to_have_text("You approved this elsewhere.")
    expect(card.get_by_role("button")).to_have_count(0)
    expect(area).to_be_visible()  # not written, so not taken away: read-only, to copy
    expect(area).to_have_value(MINE)
    expect(area).to_have_js_property("readOnly", True)
    expect(area).to_be_enabled()


def test_a_decision_that_lost_the_race_shows_what_the_winner_wrote(
    watched: WatchedPage, server: str
) -> None:
    """409 ``already_decided`` carries the winner's decision: the card shows its edit as what
    was approved, not the proposal it still had (drawn by the app's module, the refusal
    scripted)."""
    page = watched.page
    open_app(page, server)
    page.evaluate(
        """async (mine) => {
          const { consentCard } = await import("/web/consent-card.js");
          const { ConsentryError } = await import("/web/consentry.js");
          const decided = {
            status: "edited", decision: "edit", decided_by: "acme/ada", decided_by_name: "Ada",
            decided_at: "2026-12-01T10:00:00Z", edited: { content: mine }, value: null,
            comment: null,
          };
          const consent = {
            approval_id: "lost-race", thread_id: "synthetic", kind: "note_edit",
            title: "Add a summary?", allowed_decisions: ["approve", "edit", "reject"],
            expires_at: null,
            proposal: {
              note_id: "n", project_id: "p", title: "Race", base_version: 1,
              base_content: "Before the summary.",
              proposed_content: "Before the summary.\\n\\nTheirs.",
            },
          };
          document.querySelector("#chat-log").append(consentCard(consent, {
            send: async () => {
              const details = { approval_id: "lost-race", status: "edited", decided };
              throw new ConsentryError(409, "already_decided", "Already decided.", details);
            },
          }));
        }""",
        MINE,
    )
    card = page.locator('#chat-log .consent-card[data-approval-id="lost-race"]')

    card.get_by_role("button", name="Approve").click()

    expect(card).to_have_attribute("data-state", "refused")
    expect(card.locator(".consent-status")).to_have_text(
        "Ada approved this with an edit. Nothing more was sent."
    )
    expect(card.locator(".diff figcaption")).to_have_text(
        "Approved with an edit for “Race”: 2 lines added, 0 removed"
    )
    expect(card.locator(".diff .diff-line.add")).to_have_text(
        ["+", "+My own words: spacing beats cramming."]
    )
