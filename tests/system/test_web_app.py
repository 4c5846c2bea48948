"""The built-in web app in real headless Chromium against a real server process.

Each test works on its own note in a fresh browser context (``tests/system/browser.py``), and
leaves a screenshot of its final page in ``test-artifacts/screenshots/``. The offline model is
deterministic: a question gets an answer from the notes, and "Add a summary of our discussion to
my note" with a note open, once something was discussed, asks a ``note_edit`` consent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, Request, Route, expect

from tests.paths import DOCS
from tests.sse import ASK_FOR_SUMMARY, parse_events
from tests.system.browser import ARTIFACTS, PHONE, WatchedPage, watched_page
from tests.system.server import API_KEY, serve
from tests.system.web_steps import (
    SUMMARY_HEADING,
    ask_a_question,
    ask_for_a_summary,
    ask_for_a_summary_over_the_api,
    create_note,
    note_id_open_in,
    open_app,
    open_note,
    send,
    versions_of,
)

README_SCREENSHOT = DOCS / "images" / "web-app.png"
RAG_NOTE = [
    "RAG retrieves passages first, then generates an answer.",
    "Retrieval: embed the question, find the nearest passages.",
    "Generation: the model answers from those passages only.",
    "Why: fresher facts, fewer made-up ones, and sources to cite.",
    "Chunking: 200 to 500 tokens a passage, with some overlap.",
    "Reranking: a cross-encoder orders the top hits.",
    "Evaluation: recall@k for retrieval, faithfulness for answers.",
]


# ---- fixtures: one server and one browser per module, a fresh page per test ----


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("web") / "c.db") as base_url:
        yield base_url


# ---- helpers: what the page went through ----


def record_assistant_text_lengths(page: Page) -> None:
    """From now on, note every length the last assistant bubble's text goes through while it
    streams (the whole message then replaces it, as Markdown)."""
    page.evaluate(
        """() => {
          window.assistantTextLengths = [];
          const log = document.querySelector("#chat-log");
          new MutationObserver(() => {
            const bubbles = log.querySelectorAll(".msg.assistant .text");
            const last = bubbles[bubbles.length - 1];
            if (last?.parentElement.dataset.state === "streaming") {
              window.assistantTextLengths.push(last.textContent.length);
            }
          }).observe(log, { childList: true, subtree: true, characterData: true });
        }"""
    )


def recorded_assistant_text_lengths(page: Page) -> list[int]:
    lengths: list[int] = page.evaluate("() => window.assistantTextLengths")
    return lengths


def record_decisions_sent(page: Page) -> list[dict[str, Any]]:
    """From now on, collect every decision the page sends (a chat request with a ``resume``)."""
    decisions: list[dict[str, Any]] = []

    def on_request(request: Request) -> None:
        if request.method == "POST" and request.url.endswith("/v1/chat"):
            body = request.post_data_json
            if "resume" in body:
                decisions.append(body["resume"])

    page.on("request", on_request)
    return decisions


def focus_by_tabbing(page: Page, target: Locator, *, key: str = "Tab", limit: int = 30) -> None:
    """Press Tab (or Shift+Tab) until ``target`` has the focus, as a keyboard user would."""
    for _ in range(limit):
        if target.evaluate("element => element === document.activeElement"):
            return
        page.keyboard.press(key)
    raise AssertionError(f"{key} pressed {limit} times never reached {target}")


# ---- the consent flows ----


def test_an_approved_note_edit_shows_in_the_note_at_once_and_in_its_history(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    open_app(page, server)
    page.once("dialog", lambda dialog: dialog.accept("Machine learning"))
    page.locator("#new-project").click()
    expect(page.locator("#project-select option:checked")).to_have_text("Machine learning")
    expect(page.locator("#note-list-empty")).to_be_visible()
    page.locator("#new-note").click()
    expect(page.locator("#note-version")).to_have_text("Version 1")
    page.locator("#note-title").fill("Retrieval-augmented generation")
    page.locator("#note-content").fill("\n".join(RAG_NOTE))
    expect(page.locator("#note-status")).to_have_text("Unsaved changes")
    page.locator("#note-save").click()
    expect(page.locator("#note-version")).to_have_text("Version 2")
    note_id = note_id_open_in(page)

    record_assistant_text_lengths(page)
    answer = ask_a_question(page, "What does retrieval do?")
    expect(answer).to_contain_text("Here is what your notes say")
    expect(page.locator("#chat-log p.step").first).to_be_visible()
    lengths = recorded_assistant_text_lengths(page)
    assert len(set(lengths)) > 2, f"the answer did not stream token by token: {lengths}"
    assert lengths == sorted(lengths), f"the answer shrank while streaming: {lengths}"

    card = ask_for_a_summary(page, discussed=True)
    expect(card.locator(".consent-title")).to_have_text(
        "Add a summary to your note “Retrieval-augmented generation”?"
    )
    expect(card.locator(".diff .diff-fold")).to_have_text(["… 4 unchanged lines"])
    context = [f" {line}" for line in RAG_NOTE[4:]]  # three lines before the change
    expect(card.locator(".diff .diff-line.same")).to_have_text(context)
    expect(card.locator(".diff .diff-line.add").filter(has_text=SUMMARY_HEADING)).to_have_count(1)
    expect(card.locator(".diff .diff-line.del")).to_have_count(0)
    expect(card.locator(".countdown")).to_have_text(re.compile(r"^Expires in \d\d:\d\d:\d\d$"))
    expect(page.locator("#toast")).not_to_have_class(re.compile(r"\bshown\b"))
    # The README's picture: a test artifact on every run, the committed file when asked for
    # (`UPDATE_README_SCREENSHOT=1 make test`), so a test run leaves the work tree clean.
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / README_SCREENSHOT.name)
    if os.environ.get("UPDATE_README_SCREENSHOT") == "1":
        page.screenshot(path=README_SCREENSHOT)

    card.locator(".approve").click()
    expect(card).to_have_attribute("data-state", "decided")
    expect(card.locator(".consent-status")).to_have_text("Approved")
    expect(page.locator("#note-version")).to_have_text("Version 3")
    expect(card.locator(".diff figcaption")).to_have_text(
        re.compile(r"^Written to “Retrieval-augmented generation” as version 3: \d+ lines added")
    )
    expect(page.locator("#note-content")).to_have_value(re.compile(re.escape(SUMMARY_HEADING)))
    expect(page.locator("#chat-log p.applied")).to_have_text(
        "Saved “Retrieval-augmented generation”, version 3."
    )
    page.locator("#note-history").click()
    expect(page.locator('#version-list li[data-version="3"]')).to_contain_text(
        "by the tutor, approved by you"
    )
    expect(page.locator('#version-list li[data-version="2"]')).to_contain_text("by you")
    expect(page.locator("body")).not_to_contain_text("local/local")  # people have names

    versions = versions_of(api, note_id)
    assert [(v["version"], v["author"]) for v in versions] == [
        (1, "user"),
        (2, "user"),
        (3, "assistant"),
    ]
    assert versions[2]["approval_id"] == card.get_attribute("data-approval-id")
    assert versions[2]["content"] == page.locator("#note-content").input_value()


def test_an_edit_card_has_one_row_of_actions_and_shows_what_it_wrote(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    """One row, one obvious action: Edit… opens the editor and gives its place to Cancel, and
    Approve, once the text changed, reads "Approve my edit"; no second button saves the same
    edit. Decided, the card shows the person's text as written (the run's `note` event), not the
    proposal."""
    page = watched.page
    note = create_note(api, "Edit flow", "Line one.")
    open_note(page, server, note)
    card = ask_for_a_summary(page)
    buttons = card.get_by_role("button")  # the ones shown, in their order
    expect(buttons).to_have_text(["Approve", "Edit…", "Reject"])
    edit = card.get_by_role("button", name="Edit…")
    expect(edit).to_have_attribute("aria-expanded", "false")

    edit.click()
    editor = card.locator(".consent-editor")
    expect(editor).to_be_visible()
    area = editor.locator("textarea.edit-content")
    expect(area).to_be_focused()
    expect(area).to_have_value(re.compile(r"^Line one\.\n\n" + re.escape(SUMMARY_HEADING)))
    expect(buttons).to_have_text(["Approve", "Cancel", "Reject"])
    expect(card.locator("button.edit")).to_have_attribute("aria-expanded", "true")
    mine = "Line one.\n\nMy own summary: retrieval comes first."
    area.fill(mine)
    expect(buttons).to_have_text(["Approve my edit", "Cancel", "Reject"])
    card.get_by_role("button", name="Approve my edit").click()

    expect(card).to_have_attribute("data-state", "decided")
    expect(card.locator(".consent-status")).to_have_text("Approved with your edit")
    expect(page.locator("#note-version")).to_have_text("Version 2")
    expect(page.locator("#note-content")).to_have_value(mine)
    expect(card.locator(".diff figcaption")).to_have_text(
        "Written to “Edit flow” as version 2: 2 lines added, 0 removed"
    )
    expect(card.locator(".diff .diff-line")).to_have_text(
        [" Line one.", "+", "+My own summary: retrieval comes first."]
    )
    expect(editor).to_be_hidden()  # what was written shows instead
    expect(buttons).to_have_count(0)  # decided: its outcome says what was done
    assert api.get(f"/v1/notes/{note['note_id']}").json()["content"] == mine
    assert [v["author"] for v in versions_of(api, note["note_id"])] == ["user", "assistant"]
    page.locator("#note-history").click()
    expect(page.locator('#version-list li[data-version="2"]')).to_contain_text(
        "your edit, approved"
    )


def test_a_refused_edit_leaves_the_card_open_and_the_consent_pending(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    """A blank edit is refused (422 ``invalid_edit``): nothing was decided, so the card opens
    again and says why; while the edit stays open, Approve would send it again; cancelled,
    approving the proposal works."""
    watched.expect_http_status(422)
    page = watched.page
    note = create_note(api, "Blank edit", "Keep me.")
    open_note(page, server, note)
    card = ask_for_a_summary(page)

    card.locator(".edit").click()
    card.locator("textarea.edit-content").fill("   ")
    card.locator(".approve").click()

    expect(card).to_have_attribute("data-state", "pending")
    expect(card.locator(".consent-status")).to_have_class(re.compile(r"\berror\b"))
    expect(card.locator(".approve")).to_be_enabled()
    expect(card.locator(".approve")).to_have_text("Approve my edit")
    approval_id = card.get_attribute("data-approval-id")
    assert api.get(f"/v1/approvals/{approval_id}").json()["status"] == "pending"

    card.locator(".edit-cancel").click()
    expect(card.locator(".consent-editor")).to_be_hidden()
    expect(card.get_by_role("button")).to_have_text(["Approve", "Edit…", "Reject"])
    expect(card.locator(".edit")).to_be_focused()  # the keyboard's place: where it opened
    expect(card.locator(".edit")).to_have_attribute("aria-expanded", "false")
    card.locator(".approve").click()
    expect(card).to_have_attribute("data-state", "decided")
    expect(page.locator("#note-version")).to_have_text("Version 2")


def test_saving_an_unchanged_note_writes_no_version(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    """A habitual Ctrl+S would otherwise make a pending proposal stale."""
    page = watched.page
    note = create_note(api, "Unchanged", "As it was.")
    open_note(page, server, note)

    page.locator("#note-content").press("Control+s")

    expect(page.locator("#toast")).to_have_text("No changes to save.")
    expect(page.locator("#note-version")).to_have_text("Version 1")
    assert [v["version"] for v in versions_of(api, note["note_id"])] == [1]


def test_a_rejection_keeps_the_note_and_records_the_comment(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Reject flow", "Keep me as I am.")
    open_note(page, server, note)
    card = ask_for_a_summary(page)
    approval_id = card.get_attribute("data-approval-id")

    card.locator("input.consent-comment").fill("Not in this note, please.")
    card.locator(".reject").click()

    expect(card).to_have_attribute("data-state", "decided")
    expect(card.locator(".consent-status")).to_have_text("Rejected: nothing was changed.")
    # the proposal is not shown as a change to come: folded away, and said so
    expect(card.locator(".not-written > summary")).to_have_text("Proposed, not written")
    expect(card.locator(".not-written .diff")).to_be_hidden()
    expect(page.locator("#chat-send")).to_be_enabled()  # the resumed run ended
    expect(page.locator("#note-version")).to_have_text("Version 1")
    expect(page.locator("#note-content")).to_have_value("Keep me as I am.")
    assert [v["version"] for v in versions_of(api, note["note_id"])] == [1]
    approval = api.get(f"/v1/approvals/{approval_id}").json()
    assert approval["status"] == "rejected"
    assert approval["decided"]["decision"] == "reject"
    assert approval["decided"]["comment"] == "Not in this note, please."


def test_a_reload_shows_the_pending_consent_and_the_transcript_again(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Reload", "Attention weighs tokens.")
    open_note(page, server, note)
    ask_a_question(page, "What does attention weigh?")
    card = ask_for_a_summary(page, discussed=True)
    approval_id = card.get_attribute("data-approval-id")
    title = card.locator(".consent-title").inner_text()
    messages = page.locator("#chat-log .msg")
    before = [(m.get_attribute("class"), m.locator(".text").inner_text()) for m in messages.all()]

    page.reload()

    card = page.locator(f'#chat-log .consent-card[data-approval-id="{approval_id}"]')
    expect(card.locator(".consent-title")).to_have_text(title)
    expect(page.locator("#chat-log .consent-card")).to_have_count(1)
    for button in (card.locator(".approve"), card.locator(".edit"), card.locator(".reject")):
        expect(button).to_be_enabled()
    expect(messages).to_have_count(len(before))
    after = [(m.get_attribute("class"), m.locator(".text").inner_text()) for m in messages.all()]
    assert after == before
    assert [kind for kind, _ in before] == [
        "msg user",
        "msg assistant",
        "msg user",
        "msg assistant",  # what the tutor drafted, before it asked
    ]

    card.locator(".approve").click()
    expect(card).to_have_attribute("data-state", "decided")
    expect(page.locator("#note-version")).to_have_text("Version 2")
    assert [v["author"] for v in versions_of(api, note["note_id"])] == ["user", "assistant"]


@pytest.mark.parametrize("clicks", ["dblclick", "two rapid clicks"])
def test_a_double_click_on_approve_writes_one_note_version(
    watched: WatchedPage, api: httpx.Client, server: str, clicks: str
) -> None:
    page = watched.page
    note = create_note(api, f"Double click ({clicks})", "One version more, not two.")
    open_note(page, server, note)
    card = ask_for_a_summary(page)
    approve = card.locator(".approve")
    decisions = record_decisions_sent(page)

    if clicks == "dblclick":
        approve.dblclick()
    else:  # two separate clicks at the mouse, with no waiting in between
        box = approve.bounding_box()
        assert box
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.click(x, y)
        page.mouse.click(x, y)

    expect(page.locator("#chat-log p.applied")).to_have_count(1)
    expect(page.locator("#chat-send")).to_be_enabled()
    expect(card).to_have_attribute("data-state", "decided")
    expect(card.locator(".consent-status")).to_have_text("Approved")
    expect(page.locator("#chat-log p.error")).to_have_count(0)
    assert decisions == [
        {"approval_id": card.get_attribute("data-approval-id"), "decision": "approve"}
    ]
    assert [v["author"] for v in versions_of(api, note["note_id"])] == ["user", "assistant"]


def test_the_inbox_decides_a_consent_asked_elsewhere(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    asked = []
    for title in ("Inbox one", "Inbox two"):  # two threads, both waiting
        note = create_note(api, title, f"{title} before the summary.")
        events = ask_for_a_summary_over_the_api(api, note)
        asked.append((note, events[-2], events[-1]))
    (note, consent, final), (_, other, _) = asked

    open_app(page, server, "#/inbox")
    card = page.locator(f'#inbox-view .consent-card[data-approval-id="{consent.approval_id}"]')
    other_card = page.locator(f'#inbox-view .consent-card[data-approval-id="{other.approval_id}"]')
    expect(other_card).to_be_visible()
    badge = page.locator("#inbox-count")
    expect(badge).to_have_text(str(page.locator("#inbox-list .consent-card").count()))
    expect(card.locator(".consent-title")).to_have_text("Add a summary to your note “Inbox one”?")
    expect(card.locator(".diff .diff-line.same")).to_have_text(["Inbox one before the summary."])
    expect(card.locator(".diff .diff-line.add").filter(has_text=SUMMARY_HEADING)).to_have_count(1)
    pending = int(badge.inner_text())
    assert pending >= 2

    with page.expect_response(lambda response: "/decision" in response.url) as decision:
        card.locator(".approve").click()

    assert decision.value.status == 202
    expect(card).to_have_attribute("data-state", "decided")
    expect(card.locator(".consent-status")).to_have_text("Approved: the tutor carries it out now.")
    expect(badge).to_have_text(str(pending - 1))
    expect(other_card.locator(".approve")).to_be_enabled()
    other_card.locator(".reject").click()
    expect(other_card.locator(".consent-status")).to_have_text("Rejected: nothing will change.")
    expect(badge).to_have_text(str(pending - 2))
    # the run goes on in the background: follow the thread's stream to its end
    joined = api.get(
        f"/v1/threads/{consent.thread_id}/stream", headers={"Last-Event-ID": str(final.seq)}
    )
    assert [e.type for e in parse_events(joined.text)][-3:] == ["note", "message", "final"]
    versions = versions_of(api, note["note_id"])
    assert [(v["author"], v["approval_id"]) for v in versions] == [
        ("user", None),
        ("assistant", consent.approval_id),
    ]


# ---- a message the server did not take ----


def test_a_network_failure_keeps_the_message_and_a_later_send_clears_the_error(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    watched.expect_network_failures()
    page = watched.page
    note = create_note(api, "Offline", "Networks fail.")
    open_note(page, server, note)
    page.route("**/v1/chat", lambda route: route.abort("internetdisconnected"))

    send(page, "Are you there?")

    error = page.locator("#chat-log p.error")
    expect(error).to_contain_text("Can't reach Consentry — your message is kept; retry.")
    expect(page.locator("#chat-input")).to_have_value("Are you there?")
    expect(page.locator("#chat-log .msg")).to_have_count(0)

    page.unroute("**/v1/chat")
    error.get_by_role("button", name="Retry").click()

    expect(page.locator("#chat-log .msg.user .text")).to_have_text(["Are you there?"])
    expect(page.locator("#chat-log .msg.assistant .text")).to_contain_text("I'm the offline model")
    expect(page.locator("#chat-send")).to_be_enabled()
    expect(error).to_have_count(0)  # the stale error line went with the send that worked
    expect(page.locator("#chat-input")).to_have_value("")


def test_a_message_while_a_consent_waits_says_so_and_can_reject_it_and_send(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    watched.expect_http_status(409)
    page = watched.page
    note = create_note(api, "Pending", "Decide me first.")
    open_note(page, server, note)
    card = ask_for_a_summary(page)
    approval_id = card.get_attribute("data-approval-id")

    send(page, "What does this note say?")

    refusal = page.locator("#chat-log p.error")
    expect(refusal).to_contain_text("Approve or reject the change above first.")
    expect(refusal).not_to_contain_text("on_pending_consent")  # words for people, not fields
    expect(page.locator("#chat-input")).to_have_value("What does this note say?")
    expect(card).to_have_attribute("data-state", "pending")

    refusal.get_by_role("button", name="Reject it and send my message").click()

    expect(card).to_have_attribute("data-state", "decided")
    expect(card.locator(".consent-status")).to_have_text(
        "Rejected by your new message: nothing was changed."
    )
    expect(page.locator("#chat-log .msg.user .text").last).to_have_text("What does this note say?")
    expect(page.locator("#chat-log .msg.assistant .text").last).to_contain_text(
        "I'm the offline model"
    )
    expect(refusal).to_have_count(0)
    approval = api.get(f"/v1/approvals/{approval_id}").json()
    assert (approval["status"], approval["decided"]["decision"]) == ("rejected", "reject")
    assert [v["version"] for v in versions_of(api, note["note_id"])] == [1]


# ---- notes: stale saves, search, history ----


def test_a_message_typed_while_the_notes_conversation_loads_waits_for_it(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    """Sending needs the conversation the message belongs to: typed before the note's
    conversation is shown, it is kept in the box (not sent to a new thread), and once shown it
    goes to that conversation, whose consent is still waiting."""
    watched.expect_http_status(409)
    page = watched.page
    note = create_note(api, "Loading", "Wait for me.")
    open_note(page, server, note)
    ask_for_a_summary(page)
    held: list[Route] = []

    def lists_its_threads(url: str) -> bool:
        return "/v1/threads?" in url and note["note_id"] in url

    page.route(lists_its_threads, lambda route: held.append(route))
    page.reload()
    page.locator(f'#note-list li[data-note-id="{note["note_id"]}"] button').click()
    expect(page.locator("#chat-context")).to_have_text("About “Loading”")
    page.wait_for_function("() => document.querySelector('#chat-log[data-shown]') === null")

    send(page, "What does this note say?")

    expect(page.locator("#chat-send")).to_be_disabled()
    expect(page.locator("#chat-input")).to_have_value("What does this note say?")
    expect(page.locator("#chat-log .msg")).to_have_count(0)
    assert held  # the listings are still held: nothing was shown, nothing sent
    for route in held:
        route.continue_()
    page.unroute(lists_its_threads)
    expect(page.locator("#chat-log[data-shown]")).to_have_count(1)
    expect(page.locator("#chat-log .consent-card")).to_have_attribute("data-state", "pending")
    page.locator("#chat-input").press("Enter")

    expect(page.locator("#chat-log p.error")).to_contain_text(
        "Approve or reject the change above first."
    )
    threads = api.get("/v1/threads", params={"note_id": note["note_id"]}).json()["threads"]
    assert len(threads) == 1


def test_a_stale_save_shows_the_conflict_and_overwrites_only_when_asked(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    watched.expect_http_status(409)
    note = create_note(api, "Stale save", "The first text.")
    open_note(page, server, note)
    theirs = api.put(
        f"/v1/notes/{note['note_id']}",
        json={"version": 1, "title": "Stale save", "content": "Their text."},
    )
    assert theirs.status_code == 200, theirs.text

    page.locator("#note-content").fill("My text.")
    page.locator("#note-save").click()

    expect(page.locator("#note-conflict")).to_be_visible()
    expect(page.locator("#conflict-text")).to_contain_text("it is now at version 2")
    expect(page.locator("#note-version")).to_have_text("Version 1")
    assert api.get(f"/v1/notes/{note['note_id']}").json()["content"] == "Their text."

    page.locator("#conflict-overwrite").click()

    expect(page.locator("#note-conflict")).to_be_hidden()
    expect(page.locator("#note-version")).to_have_text("Version 3")
    saved = api.get(f"/v1/notes/{note['note_id']}").json()
    assert (saved["version"], saved["content"]) == (3, "My text.")


def test_a_stale_save_can_drop_mine_and_reload_theirs(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    watched.expect_http_status(409)
    note = create_note(api, "Reload theirs", "The first text.")
    open_note(page, server, note)
    api.put(
        f"/v1/notes/{note['note_id']}",
        json={"version": 1, "title": "Reload theirs", "content": "Their text."},
    ).raise_for_status()

    page.locator("#note-content").fill("My text.")
    page.locator("#note-content").press("Control+s")
    expect(page.locator("#note-conflict")).to_be_visible()
    page.locator("#conflict-reload").click()

    expect(page.locator("#note-conflict")).to_be_hidden()
    expect(page.locator("#note-content")).to_have_value("Their text.")
    expect(page.locator("#note-version")).to_have_text("Version 2")
    assert [v["content"] for v in versions_of(api, note["note_id"])] == [
        "The first text.",
        "Their text.",
    ]


def test_search_finds_a_note_by_a_word_and_opens_it(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Search target", "Zeugma is a figure of speech.")
    open_app(page, server)

    page.locator("#search-input").fill("zeugma")
    page.locator("#search-input").press("Enter")
    results = page.locator("#search-results li")
    expect(results).to_have_count(1)
    expect(results).to_contain_text("Search target")
    expect(results.locator("mark")).to_have_text(["Zeugma"])
    results.locator("button").click()

    expect(page.locator("#note-title")).to_have_value("Search target")
    expect(page.locator("#note-content")).to_have_value("Zeugma is a figure of speech.")
    assert note_id_open_in(page) == note["note_id"]


def test_an_old_version_can_be_viewed_and_restored_as_a_new_version(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "History", "The old text.")
    api.put(
        f"/v1/notes/{note['note_id']}",
        json={"version": 1, "title": "History", "content": "The new text."},
    ).raise_for_status()
    open_note(page, server, {**note, "version": 2})

    page.locator("#note-history").click()
    expect(page.locator("#version-list li")).to_have_count(2)
    page.locator('#version-list li[data-version="1"] button').click()
    expect(page.locator("#version-view")).to_contain_text("The old text.")
    page.locator("#version-restore").click()

    expect(page.locator("#note-version")).to_have_text("Version 3")
    expect(page.locator("#note-content")).to_have_value("The old text.")
    assert [(v["version"], v["content"]) for v in versions_of(api, note["note_id"])] == [
        (1, "The old text."),
        (2, "The new text."),
        (3, "The old text."),
    ]


# ---- API keys, phone width, keyboard ----


def test_the_app_asks_for_an_api_key_and_keeps_it_for_the_session(
    watched: WatchedPage, key_server: str
) -> None:
    page = watched.page
    watched.expect_http_status(401)
    headers = {"Authorization": f"Bearer {API_KEY}"}
    with httpx.Client(base_url=key_server, headers=headers, timeout=30) as keyed:
        note = create_note(keyed, "Behind a key", "Only for key holders.")
    page.goto(key_server)
    dialog = page.locator("#key-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#key-error")).to_be_hidden()

    page.locator("#key-input").fill("not-a-key")
    page.locator("#key-submit").click()
    expect(page.locator("#key-error")).to_be_visible()
    expect(dialog).to_be_visible()

    page.locator("#key-input").fill(API_KEY)
    page.locator("#key-submit").click()
    expect(dialog).to_be_hidden()
    note_link = page.locator(f'#note-list li[data-note-id="{note["note_id"]}"]')
    expect(note_link).to_have_text("Behind a key")

    page.reload()
    expect(note_link).to_have_text("Behind a key")
    expect(dialog).to_be_hidden()


def test_at_phone_width_nothing_overflows_and_a_consent_can_be_approved(
    browser: Browser, api: httpx.Client, server: str, request: pytest.FixtureRequest
) -> None:
    note = create_note(api, "Phone", "A note read on a phone, with a rather long first line.")
    with watched_page(browser, request.node.name, viewport=PHONE) as watched:
        page = watched.page
        open_note(page, server, note)
        ask_a_question(page, "What is on my phone?")
        card = ask_for_a_summary(page, discussed=True)
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= PHONE["width"], (
            f"the page is {width} px wide on a {PHONE['width']} px screen"
        )

        card.locator(".approve").click()
        expect(card).to_have_attribute("data-state", "decided")
        expect(page.locator("#note-version")).to_have_text("Version 2")
    assert [v["author"] for v in versions_of(api, note["note_id"])] == ["user", "assistant"]


def test_the_chat_and_a_consent_work_with_the_keyboard_alone(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Keyboard", "Typed, never clicked.")
    open_note(page, server, note)  # the focus is now in the note's content

    chat_input = page.locator("#chat-input")
    focus_by_tabbing(page, chat_input)
    page.keyboard.type("What did I type?")
    page.keyboard.press("Enter")
    expect(page.locator("#chat-log .msg.user .text")).to_have_text(["What did I type?"])
    expect(page.locator("#chat-log .msg.assistant .text")).to_contain_text("I'm the offline model")
    expect(page.locator("#chat-send")).to_be_enabled()

    page.keyboard.type(ASK_FOR_SUMMARY)
    page.keyboard.press("Enter")
    card = page.locator("#chat-log .consent-card")
    expect(card.locator(".approve")).to_be_enabled()
    focus_by_tabbing(page, card.locator(".approve"), key="Shift+Tab")
    page.keyboard.press("Space")

    expect(card).to_have_attribute("data-state", "decided")
    expect(page.locator("#note-version")).to_have_text("Version 2")
    assert [v["author"] for v in versions_of(api, note["note_id"])] == ["user", "assistant"]
