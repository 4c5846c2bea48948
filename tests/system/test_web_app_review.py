"""Reviewing a change in the web app, in real headless Chromium against a real server process:
the diff as hunks with the changed words marked, an open edit that Approve sends rather than
drops, and Markdown in a note's preview that is shown but never run (answers: in
``test_web_app_mid_run.py``, whose model says what a test wants).

Fixtures and steps as in ``test_web_app.py``; a synthetic consent card is drawn by the app's own
module (``/web/consent-card.js``, imported in the page) where the tutor cannot be made to ask for
it (a change in the middle of a long note: the offline tutor appends).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.system.browser import LAPTOP, PHONE, WatchedPage
from tests.system.server import serve
from tests.system.web_steps import (
    ask_for_a_summary,
    create_note,
    open_app,
    open_note,
    versions_of,
)

LONG_NOTE = "\n".join(f"Line {n}: fact number {n} about cells." for n in range(1, 61))
LINE_50_BEFORE = "Line 50: the cell has one nucleus."
LINE_50_AFTER = "Line 50: the cell has two nuclei."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("web-review") / "c.db") as base_url:
        yield base_url


def long_note_with_line_50(line: str) -> str:
    lines = LONG_NOTE.split("\n")
    lines[49] = line
    return "\n".join(lines)


def mount_card(page: Page, where: str, consent: dict[str, Any]) -> Locator:
    """Draw a consent card with the app's own module into ``where`` (the chat, the inbox)."""
    page.evaluate(
        """async ({ where, consent }) => {
          const { consentCard } = await import("/web/consent-card.js");
          const card = consentCard(consent, { send: async () => "Sent." });
          document.querySelector(where).append(card);
        }""",
        {"where": where, "consent": consent},
    )
    return page.locator(f'{where} .consent-card[data-approval-id="{consent["approval_id"]}"]')


def line_50_consent(approval_id: str) -> dict[str, Any]:
    return {
        "approval_id": approval_id,
        "thread_id": "synthetic",
        "kind": "note_edit",
        "title": "Change line 50?",
        "proposal": {
            "note_id": "synthetic",
            "title": "Cells",
            "base_version": 1,
            "base_content": long_note_with_line_50(LINE_50_BEFORE),
            "proposed_content": long_note_with_line_50(LINE_50_AFTER),
        },
        "allowed_decisions": ["approve", "edit", "reject"],
        "expires_at": (datetime.now(UTC) + timedelta(hours=1)).isoformat(),
    }


def assert_in_view_of_its_diff(line: Locator) -> None:
    """``line`` shows in its diff's box as the card is drawn: the diff is not scrolled, and the
    line is inside it, and on the screen."""
    placement = line.evaluate(
        """(line) => {
          const list = line.closest(".diff-lines");
          const box = line.getBoundingClientRect();
          const frame = list.getBoundingClientRect();
          const inside = box.top >= frame.top && box.bottom <= frame.bottom;
          return { scrolled: list.scrollTop, inside };
        }"""
    )
    assert placement == {"scrolled": 0, "inside": True}, placement
    line.scroll_into_view_if_needed()  # the card may be below the page's fold, not the diff
    expect(line).to_be_in_viewport()


# ---- diffs ----


def test_diff_js_folds_a_long_note_into_hunks_and_marks_the_changed_words(
    watched: WatchedPage, server: str
) -> None:
    page = watched.page
    open_app(page, server)

    result = page.evaluate(
        """async ({ before, after }) => {
          const { hunks, lineDiff, pairChangedLines, wordDiff } = await import("/web/diff.js");
          const lines = lineDiff(before, after);
          const words = pairChangedLines(lines);
          return {
            hunks: hunks(lines).map((part) => ({
              type: part.type,
              lines: part.lines.map((l) => [l.op, l.oldNo, l.newNo]),
            })),
            words: [...words.keys()].sort((a, b) => a - b).map((i) => [lines[i].op, words.get(i)]),
            unlike: wordDiff("Completely different words here.", "Nothing alike at all!"),
            edges: hunks(lineDiff("a\\nb\\nc\\nd\\ne\\nf\\ng\\nh", "A\\nb\\nc\\nd\\ne\\nf\\ng\\nH"))
              .map((part) => [part.type, part.lines.length]),
            same: hunks(lineDiff("a\\nb", "a\\nb")).map((part) => [part.type, part.lines.length]),
          };
        }""",
        {
            "before": long_note_with_line_50(LINE_50_BEFORE),
            "after": long_note_with_line_50(LINE_50_AFTER),
        },
    )

    same = [["same", n, n] for n in range(47, 50)]
    after = [["same", n, n] for n in range(51, 54)]
    assert result["hunks"] == [
        {"type": "fold", "lines": [["same", n, n] for n in range(1, 47)]},
        {"type": "lines", "lines": [*same, ["del", 50, None], ["add", None, 50], *after]},
        {"type": "fold", "lines": [["same", n, n] for n in range(54, 61)]},
    ]
    assert result["words"] == [
        [
            "del",
            [
                {"text": "Line 50: the cell has ", "changed": False},
                {"text": "one nucleus", "changed": True},
                {"text": ".", "changed": False},
            ],
        ],
        [
            "add",
            [
                {"text": "Line 50: the cell has ", "changed": False},
                {"text": "two nuclei", "changed": True},
                {"text": ".", "changed": False},
            ],
        ],
    ]
    assert result["unlike"] is None  # two different lines: no word marks, each line whole
    # two changes 6 lines apart share their context: one hunk, nothing folded between them
    assert result["edges"] == [["lines", 10]]
    assert result["same"] == [["fold", 2]]


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_a_change_deep_in_a_long_note_is_in_view_on_its_card_in_the_chat_and_the_inbox(
    watched: WatchedPage, server: str, viewport: dict[str, int]
) -> None:
    page = watched.page
    page.set_viewport_size(viewport)  # type: ignore[arg-type]
    open_app(page, server)
    expect(page.locator("#chat-log .hint")).to_be_visible()  # the chat is drawn: it stays

    for where, approval_id in (("#chat-log", "in-chat"), ("#inbox-list", "in-inbox")):
        if where == "#inbox-list":
            page.locator("#nav-inbox").click()
            expect(page.locator("#inbox-list > *").first).to_be_visible()  # loaded
        card = mount_card(page, where, line_50_consent(approval_id))
        removed = card.locator(".diff-line.del")
        added = card.locator(".diff-line.add")
        expect(removed).to_have_text(["−" + LINE_50_BEFORE])
        expect(added).to_have_text(["+" + LINE_50_AFTER])
        expect(removed.locator(".word")).to_have_text(["one nucleus"])
        expect(added.locator(".word")).to_have_text(["two nuclei"])
        assert_in_view_of_its_diff(removed)
        assert_in_view_of_its_diff(added)
        folds = card.locator(".diff-fold")
        expect(folds).to_have_text(["… 46 unchanged lines", "… 7 unchanged lines"])
        expect(card.locator(".diff-line")).to_have_count(8)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"]

        folds.first.click()  # unfolds in place

        expect(folds).to_have_text(["… 7 unchanged lines"])
        expect(card.locator(".diff-line")).to_have_count(54)
        expect(card.locator(".diff-line").first).to_have_text(" Line 1: fact number 1 about cells.")


def test_a_summary_of_a_long_note_shows_its_change_first_in_the_chat_inbox_and_phone(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Sixty lines", LONG_NOTE)
    open_note(page, server, note)

    card = ask_for_a_summary(page)
    approval_id = card.get_attribute("data-approval-id")
    inbox_card = page.locator(f'#inbox-list .consent-card[data-approval-id="{approval_id}"]')

    for shown in (card, inbox_card):
        if shown is inbox_card:
            page.locator("#nav-inbox").click()
        expect(shown.locator(".diff-fold")).to_have_text(["… 57 unchanged lines"])
        expect(shown.locator(".diff-line.same")).to_have_text(
            [f" Line {n}: fact number {n} about cells." for n in (58, 59, 60)]
        )
        assert_in_view_of_its_diff(shown.locator(".diff-line.add").first)
    page.set_viewport_size(PHONE)  # type: ignore[arg-type]
    assert_in_view_of_its_diff(inbox_card.locator(".diff-line.add").first)
    page.locator("#nav-notes").click()
    assert_in_view_of_its_diff(card.locator(".diff-line.add").first)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]


# ---- an open edit is what Approve sends ----


def test_approve_with_an_edit_open_writes_the_persons_text_not_the_proposal(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Edit then approve", "Line one.")
    open_note(page, server, note)
    card = ask_for_a_summary(page)
    approval_id = card.get_attribute("data-approval-id")
    approve = card.locator(".approve")

    card.locator(".edit").click()
    mine = "Line one.\n\nMy summary, typed before I clicked the blue button."
    card.locator("textarea.edit-content").fill(mine)
    approve.click()

    expect(card).to_have_attribute("data-state", "decided")
    expect(page.locator("#note-version")).to_have_text("Version 2")
    assert api.get(f"/v1/notes/{note['note_id']}").json()["content"] == mine
    assert [v["content"] for v in versions_of(api, note["note_id"])] == ["Line one.", mine]
    decided = api.get(f"/v1/approvals/{approval_id}").json()["decided"]
    assert (decided["decision"], decided["edited"]) == ("edit", {"content": mine})
    expect(card.locator(".consent-status")).to_have_text("Approved with your edit")
    expect(approve).to_have_text("Approve my edit")  # it said what it would send


def test_an_edit_being_typed_on_a_card_survives_a_visit_to_the_inbox(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Edit, look elsewhere, come back", "Line one.")
    open_note(page, server, note)
    card = ask_for_a_summary(page)
    approval_id = card.get_attribute("data-approval-id")
    card.locator(".edit").click()
    mine = "Line one.\n\nHalf of my own summary"
    card.locator("textarea.edit-content").fill(mine)
    drawn = card.element_handle()

    page.locator("#nav-inbox").click()
    expect(
        page.locator(f'#inbox-list .consent-card[data-approval-id="{approval_id}"]')
    ).to_be_visible()
    # Meanwhile the note changed elsewhere: coming back shows it; nothing more is drawn after.
    changed = api.put(
        f"/v1/notes/{note['note_id']}",
        json={"version": 1, "title": note["title"], "content": "Line one, changed elsewhere."},
    )
    assert changed.status_code == 200, changed.text
    page.locator("#nav-notes").click()
    expect(page.locator("#note-version")).to_have_text("Version 2")

    # The very card (not one drawn again), its editor open with the person's text.
    assert drawn is not None
    assert drawn.evaluate("(card) => card.isConnected")
    expect(card.locator("textarea.edit-content")).to_have_value(mine)
    assert api.get(f"/v1/approvals/{approval_id}").json()["status"] == "pending"


# ---- Markdown: shown, never run ----

MARKDOWN_NOTE = """## Summary

Attention is **all** you need.

<img src=x onerror="window.pwned = 'img'">
<script>window.pwned = 'script'</script>
<p style="color: red" onclick="window.pwned = 'click'" id="chat-log">styled</p>

[a link](javascript:window.pwned='link')
"""


def test_markdown_shows_in_a_notes_preview_and_history_and_nothing_in_it_runs(
    watched: WatchedPage, api: httpx.Client, server: str
) -> None:
    page = watched.page
    note = create_note(api, "Markdown attention", MARKDOWN_NOTE)
    open_note(page, server, note)

    page.locator("#note-preview-toggle").click()

    preview = page.locator("#note-preview")
    expect(preview.locator("h2")).to_have_text("Summary")
    expect(preview.locator("strong")).to_have_text("all")
    expect(preview.locator("p", has_text="styled")).to_have_count(1)
    for forbidden in ("img", "script", "[style]", "[onclick]", "[id]", "a[href^='javascript']"):
        expect(preview.locator(forbidden)).to_have_count(0)
    expect(preview).to_contain_text("<script>window.pwned = 'script'</script>")  # shown as text
    expect(page.locator("#note-content")).to_be_hidden()
    page.locator("#note-preview-toggle").click()
    expect(page.locator("#note-content")).to_have_value(MARKDOWN_NOTE)  # editing: plain text

    page.locator("#note-history").click()
    page.locator('#version-list li[data-version="1"] button').click()
    old = page.locator("#version-view .version-content")
    expect(old.locator("h2")).to_have_text("Summary")
    expect(old.locator("img, script, [style], [onclick]")).to_have_count(0)
    assert page.evaluate("() => window.pwned") is None
    expect(page.locator("#note-version")).to_have_text("Version 1")


# ---- people are named as people ----


def test_people_are_named_by_their_display_name_and_the_signed_in_person_as_you(
    watched: WatchedPage, server: str
) -> None:
    """The words of ``people.js``, the version history and the cards, for deciders the
    single-user server cannot produce (another person, the policy)."""
    page = watched.page
    open_app(page, server)

    words = page.evaluate(
        """async () => {
          const { setCurrentUser } = await import("/web/people.js");
          const { versionCredit } = await import("/web/notes.js");
          const { outcomeText } = await import("/web/consent-words.js");
          setCurrentUser({ principal: "acme/me", tenant: "acme", user: "me", name: "Me" });
          const ada = { decided_by: "acme/ada", decided_by_name: "Ada Lovelace" };
          const version = (decision, by) => ({ author: "assistant", decision, ...by });
          return [
            versionCredit({ author: "user", decision: null, decided_by: null }),
            versionCredit(version("approve", { decided_by: "acme/me", decided_by_name: "Me" })),
            versionCredit(version("edit", { decided_by: "acme/me", decided_by_name: "Me" })),
            versionCredit(version("approve", ada)),
            versionCredit(version("edit", ada)),
            versionCredit(version("approve", { decided_by: "policy", decided_by_name: null })),
            versionCredit(version("approve", { decided_by: "acme/bob", decided_by_name: null })),
            outcomeText("approved", { decided_by: "acme/me" }, { elsewhere: true }),
            outcomeText("rejected", ada, { elsewhere: true }),
            outcomeText("edited", ada),
            outcomeText("expired", { decided_by: "system" }),
          ];
        }"""
    )

    assert words == [
        "by you",
        "by the tutor, approved by you",
        "your edit, approved",
        "by the tutor, approved by Ada Lovelace",
        "Ada Lovelace’s edit, approved",
        "by the tutor, approved by the conversation's policy",
        "by the tutor, approved by bob",  # no display name: the user, never tenant/user
        "You approved this elsewhere.",
        "Ada Lovelace rejected this: nothing was changed.",  # "elsewhere" is for you
        "Ada Lovelace approved this with an edit.",
        "This request expired: nothing was changed.",
    ]


# ---- whose lines an edit removes ----


def test_a_note_edit_that_removes_lines_says_whose_they_are_above_its_diff(
    watched: WatchedPage, server: str
) -> None:
    page = watched.page
    open_app(page, server)
    base = "My line one.\nMy line two.\n\n## Summary of our discussion\n\n- The tutor's line.\n"
    cases = {
        "theirs": ({"person_lines_removed": 2}, "My line two.\n", True),
        "own": (
            {"person_lines_removed": 0},
            base.replace("- The tutor's line.", "- Better."),
            True,
        ),
        "none": ({"person_lines_removed": 0}, f"{base}- One more.\n", False),
        "old": ({}, "My line one.\n", True),
    }
    for name, (fields, proposed, _) in cases.items():
        consent = line_50_consent(f"removal-{name}")
        consent["proposal"] |= {"base_content": base, "proposed_content": proposed, **fields}
        mount_card(page, "#chat-log", consent)

    def notice(name: str) -> Locator:
        return page.locator(f'.consent-card[data-approval-id="removal-{name}"] .removes-lines')

    expect(notice("theirs")).to_have_text(
        "This removes 2 lines you wrote or edited (marked − below). Approve only if you mean to "
        "lose them."
    )
    expect(notice("theirs")).to_have_class("warning removes-lines")
    expect(notice("own")).to_have_text(
        "This rewrites 1 line the tutor wrote earlier; every line you wrote stays."
    )
    expect(notice("none")).to_have_count(0)
    expect(notice("old")).to_have_text("This removes 5 lines of your note.")
