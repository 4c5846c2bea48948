"""The tutor's note_create and note_delete consents as a client sees them: exact event sequences,
and what is stored afterwards (notes, versions, thread status)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from consentry.schemas.events import ConsentEvent, MessageEvent, NoteEvent
from tests.sse import TUTOR_ASKED, after_a_question, chat, kinds

ASKED = TUTOR_ASKED
ASKED_TO_DELETE = ["analyze_message", "draft_note_deletion", "request_note_delete_consent"]


async def _note(client: httpx.AsyncClient) -> dict[str, Any]:
    project = (await client.post("/v1/projects", json={"name": "Learning"})).json()
    response = await client.post(
        f"/v1/projects/{project['project_id']}/notes",
        json={"title": "RAG", "content": "Retrieval-augmented generation uses documents."},
    )
    note: dict[str, Any] = response.json()
    return note


async def _ask_to_delete(client: httpx.AsyncClient, note: dict[str, Any]) -> ConsentEvent:
    events = await chat(client, {"message": "Please delete this note", "note_id": note["note_id"]})
    assert kinds(events) == ASKED
    assert [e.node for e in events if e.type == "step"] == ASKED_TO_DELETE
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    return consent


async def _decide(
    client: httpx.AsyncClient, consent: ConsentEvent, decision: str, **extra: Any
) -> list[Any]:
    return await chat(
        client,
        {
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": decision, **extra},
        },
    )


async def test_a_deletion_request_asks_with_the_note_as_it_is(client: httpx.AsyncClient) -> None:
    note = await _note(client)

    consent = await _ask_to_delete(client, note)

    assert (consent.kind, consent.title, consent.allowed_decisions) == (
        "note_delete",
        "Delete your note \u201cRAG\u201d?",
        ["approve", "reject"],
    )
    assert consent.proposal == {
        "note_id": note["note_id"],
        "title": "RAG",
        "version": 1,
        "content": note["content"],
    }
    assert (await client.get(f"/v1/notes/{note['note_id']}")).status_code == 200
    thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
    assert thread["status"] == "awaiting_consent"


@pytest.mark.parametrize("policy", ["auto_approve", "auto_reject"])
async def test_a_deletion_always_waits_for_a_person_whatever_the_policy(
    client: httpx.AsyncClient, policy: str
) -> None:
    note = await _note(client)

    events = await chat(
        client,
        {"message": "delete this note", "note_id": note["note_id"], "consent_policy": policy},
    )

    assert kinds(events) == ASKED
    assert [e.node for e in events if e.type == "step"] == ASKED_TO_DELETE
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    assert events[-1].reason == "interrupted"  # type: ignore[union-attr]
    thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
    assert [c["approval_id"] for c in thread["pending_consents"]] == [consent.approval_id]
    assert (await client.get(f"/v1/notes/{note['note_id']}")).status_code == 200


async def test_approving_deletes_the_note(client: httpx.AsyncClient) -> None:
    note = await _note(client)
    consent = await _ask_to_delete(client, note)

    events = await _decide(client, consent, "approve")

    assert kinds(events) == ["run_started", "step", "step", "message", "final"]
    assert [e.node for e in events if e.type == "step"] == [
        "request_note_delete_consent",
        "delete_note",
    ]
    message = events[-2]
    assert isinstance(message, MessageEvent)
    assert message.content == "Done: I deleted \u201cRAG\u201d."
    assert (await client.get(f"/v1/notes/{note['note_id']}")).status_code == 404
    again = await client.post(
        "/v1/chat",
        json={
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": "approve"},
        },
    )
    assert again.status_code == 409


async def test_rejecting_keeps_the_note(client: httpx.AsyncClient) -> None:
    note = await _note(client)
    consent = await _ask_to_delete(client, note)

    events = await _decide(client, consent, "reject", comment="keep it")

    assert kinds(events) == ["run_started", "step", "step", "message", "final"]
    assert [e.node for e in events if e.type == "step"] == [
        "request_note_delete_consent",
        "keep_note",
    ]
    assert events[-2].content == (  # type: ignore[union-attr]
        "OK, I kept your note \u201cRAG\u201d. You said: \u201ckeep it\u201d."
    )
    stored = (await client.get(f"/v1/notes/{note['note_id']}")).json()
    assert stored["version"] == 1


async def test_a_deletion_cannot_be_edited_and_stays_pending(client: httpx.AsyncClient) -> None:
    note = await _note(client)
    consent = await _ask_to_delete(client, note)

    response = await client.post(
        "/v1/chat",
        json={
            "thread_id": consent.thread_id,
            "resume": {
                "approval_id": consent.approval_id,
                "decision": "edit",
                "edited": {"title": "Keep"},
            },
        },
    )

    assert response.status_code == 422, response.text
    thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
    assert [c["approval_id"] for c in thread["pending_consents"]] == [consent.approval_id]
    assert (await client.get(f"/v1/notes/{note['note_id']}")).status_code == 200


async def test_a_note_changed_after_the_request_is_not_deleted(client: httpx.AsyncClient) -> None:
    note = await _note(client)
    consent = await _ask_to_delete(client, note)
    changed = await client.put(
        f"/v1/notes/{note['note_id']}", json={"version": 1, "content": "Rewritten."}
    )
    assert changed.status_code == 200, changed.text

    events = await _decide(client, consent, "approve")

    assert kinds(events) == ["run_started", "step", "step", "message", "final"]
    assert events[-2].content == (  # type: ignore[union-attr]
        "Nothing was deleted: \u201cRAG\u201d changed since I asked (version 1 \u2192 2). "
        "Ask me again if you still want to delete it."
    )
    stored = (await client.get(f"/v1/notes/{note['note_id']}")).json()
    assert (stored["version"], stored["content"]) == (2, "Rewritten.")


async def test_with_no_note_open_nothing_is_asked(client: httpx.AsyncClient) -> None:
    events = await chat(client, {"message": "Please delete this note"})

    assert kinds(events) == ["run_started", "step", "step", "message", "final"]
    assert [e.node for e in events if e.type == "step"] == [
        "analyze_message",
        "report_no_open_note",
    ]
    assert events[-2].content == (  # type: ignore[union-attr]
        "There is no note open to delete. Open the note you want to delete, then ask again."
    )
    thread = (await client.get(f"/v1/threads/{events[0].thread_id}")).json()
    assert (thread["status"], thread["pending_consents"]) == ("idle", [])


async def test_an_edited_new_note_is_created_with_the_persons_title_and_content(
    client: httpx.AsyncClient,
) -> None:
    asked = await after_a_question(client, {"message": "Please save our discussion to a note"})
    consent = asked[-2]
    assert isinstance(consent, ConsentEvent)
    assert consent.kind == "note_create"

    refused = await client.post(
        "/v1/chat",
        json={
            "thread_id": consent.thread_id,
            "resume": {
                "approval_id": consent.approval_id,
                "decision": "edit",
                "edited": {"content": "   "},
            },
        },
    )
    assert refused.status_code == 422, refused.text

    events = await _decide(
        client, consent, "edit", edited={"title": "Kana", "content": "Hiragana and katakana.\n"}
    )

    assert kinds(events) == ["run_started", "step", "step", "note", "message", "final"]
    created = next(e for e in events if isinstance(e, NoteEvent))
    assert (created.title, created.content, created.version) == (
        "Kana",
        "Hiragana and katakana.\n",
        1,
    )
    assert events[-2].content == "Done: I saved your version as the new note \u201cKana\u201d."  # type: ignore[union-attr]
    versions = (await client.get(f"/v1/notes/{created.note_id}/versions")).json()["versions"]
    assert [(v["version"], v["author"], v["approval_id"]) for v in versions] == [
        (1, "assistant", consent.approval_id)
    ]
