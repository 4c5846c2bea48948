"""The tutor's review of a project's notes as a client sees it over ``/v1/chat``: the request
ends in a ``note_create`` consent proposing the review (the project's notes, the most recently
changed first, titled with the server's day), approving it creates the note; a project without
notes gets a reply and no consent. And the notes store's ``recent_notes`` on the real database:
the owner's notes of the project, most recently changed first, at most the limit."""

from __future__ import annotations

from typing import Any

import httpx

from consentry.principal import LOCAL_PRINCIPAL, Principal
from consentry.runtime.notes import OwnerNotesStore
from consentry.schemas.events import ConsentEvent, MessageEvent, NoteEvent
from tests.conftest import ManualClock
from tests.sse import (
    ASK_FOR_REVIEW,
    OFFLINE_REVIEW,
    REVIEWED_NOTES,
    TUTOR_ASKED,
    chat,
    kinds,
)

TITLE = "Weekly review, 2026-01-01"  # the test's clock: 2026-01-01T12:00Z


async def _project(client: httpx.AsyncClient, *notes: tuple[str, str]) -> str:
    """A new project with ``notes`` (title, content), written in that order."""
    project_id: str = (await client.post("/v1/projects", json={"name": "Learning"})).json()[
        "project_id"
    ]
    for title, content in notes:
        created = await client.post(
            f"/v1/projects/{project_id}/notes", json={"title": title, "content": content}
        )
        assert created.status_code == 201, created.text
    return project_id


async def test_a_review_request_asks_to_create_the_review_and_approving_creates_it(
    client: httpx.AsyncClient,
) -> None:
    project_id = await _project(client, *REVIEWED_NOTES)
    await _project(client, ("Kana", "Kana are the Japanese syllabaries."))  # another project

    asked = await chat(client, {"message": ASK_FOR_REVIEW, "project_id": project_id})
    consent = asked[-2]
    assert isinstance(consent, ConsentEvent)
    decided = await chat(
        client,
        {
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": "approve"},
        },
    )
    listed = (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]

    assert kinds(asked) == TUTOR_ASKED
    assert [e.node for e in asked if e.type == "step"] == [
        "analyze_message",
        "draft_note_review",
        "request_note_create_consent",
    ]
    said = [e.content for e in asked if isinstance(e, MessageEvent)]
    assert said == [f"I drafted \u201c{TITLE}\u201d, a review of 2 notes of this project."]
    assert (consent.kind, consent.title) == (
        "note_create",
        f"Save a summary as a new note \u201c{TITLE}\u201d?",
    )
    assert consent.proposal == {"project_id": project_id, "title": TITLE, "content": OFFLINE_REVIEW}
    assert kinds(decided) == ["run_started", "step", "step", "note", "message", "final"]
    created = next(e for e in decided if isinstance(e, NoteEvent))
    assert (created.project_id, created.title, created.content, created.version) == (
        project_id,
        TITLE,
        OFFLINE_REVIEW,
        1,
    )
    assert [note["title"] for note in listed] == [TITLE, "Spaced repetition", "RAG"]


async def test_a_review_of_a_project_without_notes_asks_nothing(client: httpx.AsyncClient) -> None:
    project_id = await _project(client)

    events = await chat(client, {"message": "Review my notes", "project_id": project_id})
    thread = (await client.get(f"/v1/threads/{events[0].thread_id}")).json()

    assert kinds(events) == ["run_started", "step", "step", "step", "message", "final"]
    assert [e.node for e in events if e.type == "step"] == [
        "analyze_message",
        "draft_note_review",
        "report_nothing_to_draft",
    ]
    said = [e.content for e in events if isinstance(e, MessageEvent)]
    assert said == ["This project has no notes to review yet."]
    assert (thread["status"], thread["pending_consents"]) == ("idle", [])


async def test_recent_notes_are_the_owners_most_recently_changed_first_up_to_the_limit(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    project_id = await _project(client, *REVIEWED_NOTES)
    notes = (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
    rag = next(note for note in notes if note["title"] == "RAG")
    clock.advance(minutes=1)
    changed = await client.put(
        f"/v1/notes/{rag['note_id']}", json={"content": "RAG retrieves.", "version": 1}
    )
    assert changed.status_code == 200, changed.text
    services: Any = client.services  # type: ignore[attr-defined]

    def store(owner: Principal) -> OwnerNotesStore:
        return OwnerNotesStore(services.db, owner, services.clock, thread_id="t")

    both = await store(LOCAL_PRINCIPAL).recent_notes(project_id, limit=10)
    one = await store(LOCAL_PRINCIPAL).recent_notes(project_id, limit=1)
    others = await store(Principal("local", "mallory")).recent_notes(project_id, limit=10)
    unknown = await store(LOCAL_PRINCIPAL).recent_notes("no-such-project", limit=10)

    assert [(n.title, n.content, n.version) for n in both] == [
        ("RAG", "RAG retrieves.", 2),
        (*REVIEWED_NOTES[1], 1),
    ]
    assert [n.title for n in one] == ["RAG"]
    assert others == unknown == []
