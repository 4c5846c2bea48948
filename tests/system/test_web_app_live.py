"""The web app stays true while others act: the approvals stream keeps the badge, the inbox and
the open consent cards live, and a note's conversations come from the server, so another
browser shows them too. Real headless Chromium against a real server process, as in
``test_web_app.py``; "another tab" is a second browser context of the same person, "elsewhere"
also the API itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Route, expect

from tests.system.browser import WatchedPage, watched_page
from tests.system.server import serve
from tests.system.web_steps import (
    ask_a_question,
    ask_for_a_summary,
    ask_for_a_summary_over_the_api,
    create_note,
    open_app,
    open_note,
    versions_of,
)

LIVE_MS = 3_000
"""How soon a change made elsewhere must show. The app's promise is within a second; the rest
is margin for a machine shared with other work. Without the stream, nothing shows at all."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("web-live") / "c.db") as base_url:
        yield base_url


def pending_count(api: httpx.Client) -> int:
    approvals = api.get("/v1/approvals", params={"status": "pending", "limit": 100}).json()
    return len(approvals["approvals"])


# ---- the approvals stream ----


def test_a_consent_decided_in_another_tab_locks_its_card_and_says_who(
    watched: WatchedPage, browser: Browser, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Two tabs", "Decided in the other tab.")
    open_note(page, server, note)
    with watched_page(browser, "test_a_consent_decided_in_another_tab-inbox") as other:
        open_app(other.page, server, "#/inbox")
        expect(other.page.locator("#inbox-list > *").first).to_be_visible()  # loaded

        card = ask_for_a_summary(page)  # asked in this tab: the other tab's inbox shows it
        approval_id = card.get_attribute("data-approval-id")
        there = other.page.locator(f'#inbox-view .consent-card[data-approval-id="{approval_id}"]')
        expect(there).to_be_visible(timeout=LIVE_MS)
        expect(other.page.locator("#inbox-count")).to_have_text(
            str(pending_count(api)), timeout=LIVE_MS
        )

        there.locator(".approve").click()
        expect(there.locator(".consent-status")).to_have_text(
            "Approved: the tutor carries it out now."
        )

    expect(card).to_have_attribute("data-state", "decided", timeout=LIVE_MS)
    expect(card.locator(".consent-status")).to_have_text("You approved this elsewhere.")
    expect(card.locator(".approve")).to_be_disabled()
    # the run the decision set going shows here too: the note is written, and said so
    expect(page.locator("#note-version")).to_have_text("Version 2", timeout=LIVE_MS)
    expect(page.locator("#chat-log p.applied")).to_have_text("Saved “Two tabs”, version 2.")
    expect(page.locator("#inbox-count")).to_have_text(str(pending_count(api)), timeout=LIVE_MS)
    assert [v["author"] for v in versions_of(api, note["note_id"])] == ["user", "assistant"]


def test_a_consent_asked_and_rejected_through_the_api_shows_in_the_open_inbox(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    open_app(page, server, "#/inbox")
    expect(page.locator("#inbox-list > *").first).to_be_visible()  # loaded
    badge = page.locator("#inbox-count")
    before = pending_count(api)
    expect(badge).to_have_text(str(before)) if before else expect(badge).to_be_hidden()

    note = create_note(api, "Asked by the API", "Asked from a script.")
    consent = ask_for_a_summary_over_the_api(api, note)[-2]

    card = page.locator(f'#inbox-view .consent-card[data-approval-id="{consent.approval_id}"]')
    expect(card.locator(".consent-title")).to_have_text(
        "Add a summary to your note “Asked by the API”?", timeout=LIVE_MS
    )
    waiting = page.locator(f'#inbox-list [data-approval-id="{consent.approval_id}"]')
    expect(waiting).to_have_count(1)
    expect(badge).to_have_text(str(before + 1), timeout=LIVE_MS)

    decided = api.post(f"/v1/approvals/{consent.approval_id}/decision", json={"decision": "reject"})
    assert decided.status_code == 202, decided.text

    expect(card.locator(".consent-status")).to_have_text(
        "You rejected this elsewhere: nothing was changed.", timeout=LIVE_MS
    )
    expect(card.locator(".reject")).to_be_disabled()
    expect(waiting).to_have_count(0)  # it waits no more: under "Decided"
    expect(
        page.locator(f'#inbox-decided-list [data-approval-id="{consent.approval_id}"]')
    ).to_be_visible()
    expect(badge).to_have_text(str(before), timeout=LIVE_MS) if before else expect(
        badge
    ).to_be_hidden(timeout=LIVE_MS)


def test_a_consent_that_expires_locks_its_card_at_once(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    """The server's expiry sweeper is scripted here (the module's consents live a day): the
    stream says the card's consent expired, as it does when the sweeper takes it."""
    page = watched.page
    expired: list[dict[str, object]] = []

    def stream(route: Route) -> None:
        body = "retry: 200\n\n"
        if expired:
            change = {"change": "expired", "approval": expired[0]}
            body += f"event: approval\nid: 2\ndata: {json.dumps(change)}\n\n"
        body += 'event: ready\nid: 2\ndata: {"pending": 0}\n\n'
        route.fulfill(status=200, headers={"content-type": "text/event-stream"}, body=body)

    page.route("**/v1/approvals/stream", stream)
    note = create_note(api, "Expiring", "Too late to decide.")
    open_note(page, server, note)
    card = ask_for_a_summary(page)
    approval = api.get(f"/v1/approvals/{card.get_attribute('data-approval-id')}").json()
    decided = {
        "status": "expired",
        "decision": "expire",
        "decided_by": "system",
        "decided_by_name": None,
        "decided_at": approval["expires_at"],
        "edited": None,
        "comment": None,
    }
    expired.append({**approval, "status": "expired", "decided": decided})

    expect(card).to_have_attribute("data-state", "expired", timeout=LIVE_MS)
    expect(card.locator(".consent-status")).to_have_text(
        "This request expired: nothing was changed."
    )
    expect(card.locator(".approve")).to_be_disabled()


def test_watch_approvals_rejoins_with_the_last_cursor_and_tells_each_change_once(
    watched: WatchedPage, server: str
) -> None:
    """The reference client's side, with the server's scripted: a stream that ends after one
    change is rejoined with ``Last-Event-ID`` set to that change's cursor."""
    page = watched.page
    asked: list[str | None] = []
    approval = {"approval_id": "a1", "status": "pending"}
    requested = json.dumps({"change": "requested", "approval": approval})
    frames = [
        f"event: approval\nid: 7\ndata: {requested}\n\n",
        'event: ready\nid: 7\ndata: {"pending": 1}\n\n',
        ": keep-alive\n\n",
    ]

    def stream(route: Route) -> None:
        asked.append(route.request.headers.get("last-event-id"))
        body = "retry: 50\n\n" + ("".join(frames) if len(asked) == 1 else frames[1])
        route.fulfill(status=200, headers={"content-type": "text/event-stream"}, body=body)

    # A small page of the server's origin that runs no app: only this client opens the stream.
    # (Not /openapi.json: ten thousand lines of JSON made the closing full-page screenshot
    # outlast Playwright's 30 s on a busy CI machine.)
    page.goto(f"{server}/healthz")
    page.route("**/v1/approvals/stream", stream)
    told = page.evaluate(
        """async () => {
          const { ConsentryClient } = await import("/web/consentry.js");
          const told = [];
          const controller = new AbortController();
          const watching = new ConsentryClient().watchApprovals({
            ready: (e) => {
              told.push(["ready", e]);
              if (told.filter(([kind]) => kind === "ready").length === 2) controller.abort();
            },
            approval: (e) => told.push(["approval", e]),
            reconnecting: (e) => told.push(["reconnecting", e]),
          }, { signal: controller.signal });
          const ended = await watching.then(() => "resolved", (error) => error.name);
          return { told, ended };
        }"""
    )

    assert asked == [None, "7"]
    assert told == {
        "told": [
            ["approval", {"change": "requested", "approval": approval, "cursor": "7"}],
            ["ready", {"pending": 1, "cursor": "7"}],
            ["reconnecting", {"lastEventId": "7", "retryMs": 50}],
            ["ready", {"pending": 1, "cursor": "7"}],
        ],
        "ended": "AbortError",
    }


# ---- a note's conversations ----


def test_a_notes_conversations_follow_it_to_another_browser_and_can_be_switched(
    watched: WatchedPage, browser: Browser, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Conversations", "Attention weighs tokens.")
    open_note(page, server, note)
    ask_a_question(page, "What does attention weigh?")
    expect(page.locator("#conversation-row")).to_be_hidden()  # one conversation: no list

    with watched_page(browser, "test_a_notes_conversations-fresh_browser") as fresh:
        other = fresh.page
        open_note(other, server, note)  # no localStorage here: the server knows the note's chats
        expect(other.locator("#chat-log .msg.user .text")).to_have_text(
            ["What does attention weigh?"]
        )
        expect(other.locator("#chat-log .msg.assistant")).to_have_count(1)

        other.locator("#new-conversation").click()
        expect(other.locator("#chat-log .msg")).to_have_count(0)
        ask_a_question(other, "And what do tokens carry?")
        conversations = other.locator("#conversation-select option")
        expect(conversations).to_have_count(2)  # newest first
        expect(conversations.first).to_contain_text("And what do tokens carry?")
        expect(conversations.last).to_contain_text("What does attention weigh?")

        other.locator("#conversation-select").select_option(index=1)
        expect(other.locator("#chat-log .msg.user .text")).to_have_text(
            ["What does attention weigh?"]
        )

    page.reload()  # this browser remembers the one it had open; the list has both
    expect(page.locator("#chat-log .msg.user .text")).to_have_text(["What does attention weigh?"])
    expect(page.locator("#conversation-select option")).to_have_count(2)
    threads = api.get("/v1/threads", params={"note_id": note["note_id"]}).json()["threads"]
    titles = [t["title"] for t in threads]
    assert titles == ["And what do tokens carry?", "What does attention weigh?"]


def test_a_consent_left_on_another_branch_shows_as_superseded_in_the_open_inbox(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    """A LangGraph SDK client forks the conversation from before its consent (Agent Chat UI's
    edit and resend): the open inbox's card says so, and nothing can be decided on it."""
    page = watched.page
    open_app(page, server, "#/inbox")
    expect(page.locator("#inbox-list > *").first).to_be_visible()  # loaded
    note = create_note(api, "Forked", "Asked, then left behind.")
    consent = ask_for_a_summary_over_the_api(api, note)[-2]
    card = page.locator(f'#inbox-view .consent-card[data-approval-id="{consent.approval_id}"]')
    expect(card).to_be_visible(timeout=LIVE_MS)
    history = api.post(f"/threads/{consent.thread_id}/history", json={"limit": 10}).json()
    answered = history[1]["checkpoint"]  # the turn before the request

    forked = api.post(
        f"/threads/{consent.thread_id}/runs/wait",
        json={
            "assistant_id": "tutor",
            "input": {"messages": [{"type": "human", "content": "What is chunking?"}]},
            "checkpoint": answered,
        },
    )

    assert forked.status_code == 200, forked.text
    expect(card.locator(".consent-status")).to_have_text(
        "Superseded: the conversation went on from an earlier point; nothing was changed.",
        timeout=LIVE_MS,
    )
    expect(card.locator(".approve")).to_be_disabled()
    expect(page.locator(f'#inbox-list [data-approval-id="{consent.approval_id}"]')).to_have_count(0)
    assert api.get(f"/v1/approvals/{consent.approval_id}").json()["status"] == "superseded"
