"""The tutor's review of a project's notes, on the graph alone (harness in tests/tutor.py): asked
for a review, it reads the project's most recently changed notes and proposes the review as a new
note (``note_create``), titled with the day of the graph's clock; it creates it once per
approval, and asks nothing for a project without notes."""

from __future__ import annotations

import pytest

from consentry_graphs.consent import ConsentRequest
from consentry_graphs.services import NoteSnapshot
from consentry_graphs.tutor.memory_notes import EffectCall, InMemoryNotesStore
from consentry_graphs.tutor.reviews import REVIEWED
from tests.tutor import INTERRUPTED, NOTE, PROJECT, Tutor

REVIEW = "Write a weekly review of my project's notes"
TITLE = "Weekly review, 2026-01-02"  # tests.tutor.NOW
ASKED_TO_REVIEW = [
    "analyze_message",
    "draft_note_review",
    "request_note_create_consent",
    INTERRUPTED,
]
SPACED = NoteSnapshot(
    note_id="note-2",
    project_id=PROJECT,
    title="Spaced repetition",
    content="# Spaced repetition\n\nYou review a fact just before you forget it. Then again.",
    version=1,
)
EMPTY = NoteSnapshot(note_id="note-3", project_id=PROJECT, title="To do", content="", version=1)
ELSEWHERE = NoteSnapshot(
    note_id="note-4", project_id="project-2", title="Kana", content="Kana.", version=1
)


def _note(number: int, *, title: str | None = None) -> NoteSnapshot:
    return NoteSnapshot(
        note_id=f"n{number}",
        project_id=PROJECT,
        title=title or f"Note {number}",
        content=f"Fact {number}.",
        version=1,
    )


async def _asked_to_review(tutor: Tutor, *, note_id: str | None = None) -> ConsentRequest:
    turn = await tutor.say(REVIEW, note_id=note_id)
    assert turn.nodes == ASKED_TO_REVIEW
    assert turn.reply == f"I drafted \u201c{TITLE}\u201d, a review of 3 notes of this project."
    return (await tutor.pending())[1]


async def test_a_review_request_proposes_the_projects_notes_as_a_new_note() -> None:
    tutor = Tutor.with_notes(NOTE, ELSEWHERE, EMPTY, SPACED)  # the last given changed last

    request = await _asked_to_review(tutor)

    assert (request.kind, request.allowed_decisions) == (
        "note_create",
        ["approve", "edit", "reject"],
    )
    assert request.title == f"Save a summary as a new note \u201c{TITLE}\u201d?"
    assert request.proposal == {
        "project_id": PROJECT,
        "title": TITLE,
        "content": (
            "## Notes reviewed\n"
            "\n"
            "- **Spaced repetition**: You review a fact just before you forget it.\n"
            "- **To do**: No text yet.\n"
            "- **RAG**: Retrieval-augmented generation uses documents.\n"
            "\n"
            "_Reviewed by the offline model._\n"
        ),
    }
    assert tutor.store.calls == []


async def test_a_review_covers_the_project_whatever_note_is_open() -> None:
    tutor = Tutor.with_notes(NOTE, EMPTY, SPACED)

    request = await _asked_to_review(tutor, note_id=NOTE.note_id)

    assert request.proposal["title"] == TITLE


async def test_approving_a_review_creates_the_note_once() -> None:
    tutor = Tutor.with_notes(NOTE, EMPTY, SPACED)
    request = await _asked_to_review(tutor)
    interrupt_id, _ = await tutor.pending()

    turn = await tutor.decide(interrupt_id, "approve")
    again = await tutor.store.apply_note_creation(
        approval_id=interrupt_id, project_id=PROJECT, title=TITLE, content="other"
    )

    assert turn.nodes == ["request_note_create_consent", "create_note"]
    assert turn.reply == f"Done: I created the new note \u201c{TITLE}\u201d."
    assert tutor.store.calls[0] == EffectCall(
        "apply_note_creation",
        interrupt_id,
        {"project_id": PROJECT, "title": TITLE, "content": request.proposal["content"]},
    )
    created = [note for note in tutor.store.notes.values() if note.title == TITLE]
    assert [note.content for note in created] == [request.proposal["content"]]
    assert again.note == created[0]
    assert not await tutor.has_pending()


async def test_rejecting_a_review_creates_nothing() -> None:
    tutor = Tutor.with_notes(NOTE, EMPTY, SPACED)
    await _asked_to_review(tutor)
    interrupt_id, _ = await tutor.pending()

    turn = await tutor.decide(interrupt_id, "reject")

    assert turn.nodes == ["request_note_create_consent", "skip_note_creation"]
    assert tutor.store.calls == []
    assert len(tutor.store.notes) == 3


async def test_a_project_without_notes_gets_a_reply_and_no_consent() -> None:
    tutor = Tutor.with_notes(ELSEWHERE)

    turn = await tutor.say(REVIEW, note_id=None)

    assert turn.nodes == ["analyze_message", "draft_note_review", "report_nothing_to_draft"]
    assert turn.reply == "This project has no notes to review yet."
    assert turn.values["nothing_to_draft"] is None
    assert not await tutor.has_pending()


async def test_a_review_covers_the_most_recent_notes_and_not_earlier_reviews() -> None:
    earlier = _note(0, title="Weekly review, 2025-12-26")
    tutor = Tutor.with_notes(*(_note(n) for n in range(1, REVIEWED + 3)), earlier)

    await tutor.say(REVIEW, note_id=None)
    _, request = await tutor.pending()

    items = [line for line in request.proposal["content"].splitlines() if line.startswith("- ")]
    newest = range(REVIEWED + 2, 2, -1)
    assert items == [f"- **Note {n}**: Fact {n}." for n in newest]


@pytest.mark.parametrize("limit", [1, 2, 5])
async def test_the_memory_store_lists_a_projects_notes_most_recently_written_first(
    limit: int,
) -> None:
    store = InMemoryNotesStore(notes={note.note_id: note for note in (NOTE, SPACED, ELSEWHERE)})
    await store.apply_note_edit(
        approval_id="a1", note_id=NOTE.note_id, title="RAG", content="New.", base_version=1
    )

    recent = await store.recent_notes(PROJECT, limit=limit)

    assert [note.note_id for note in recent] == [NOTE.note_id, SPACED.note_id][:limit]
