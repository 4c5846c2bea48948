"""A thread's consent policy: `ask` (a person decides), `auto_approve` (decided by `policy`),
`auto_reject` (a dry run); and `on_pending_consent` for messages sent while a consent waits."""

from __future__ import annotations

from typing import Any

import httpx

from consentry.schemas.events import ConsentEvent, MessageEvent, NoteEvent
from tests.sse import after_a_question, chat, kinds


async def _note(client: httpx.AsyncClient) -> dict[str, Any]:
    project = (await client.get("/v1/projects")).json()["projects"][0]
    response = await client.post(
        f"/v1/projects/{project['project_id']}/notes",
        json={"title": "RAG", "content": "Retrieval first."},
    )
    note: dict[str, Any] = response.json()
    return note


async def _audit(client: httpx.AsyncClient, thread_id: str) -> list[tuple[str, str]]:
    records = (await client.get(f"/v1/threads/{thread_id}/audit")).json()["records"]
    return [(r["action"], r["actor"]) for r in records]


async def test_auto_approve_records_the_policys_decision_and_applies_it_in_the_same_run(
    client: httpx.AsyncClient,
) -> None:
    note = await _note(client)

    events = await after_a_question(
        client,
        {
            "message": "Add a summary of our discussion to my note",
            "note_id": note["note_id"],
            "consent_policy": "auto_approve",
        },
    )

    assert kinds(events) == [
        "run_started",
        "step",
        "step",
        "message",
        "step",
        "consent",
        "step",
        "step",
        "note",
        "message",
        "final",
    ]
    consent = next(e for e in events if isinstance(e, ConsentEvent))
    assert events[-1].reason == "completed"  # type: ignore[union-attr]
    assert next(e for e in events if isinstance(e, NoteEvent)).version == 2
    approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
    assert (approval["status"], approval["decided"]["decided_by"]) == ("approved", "policy")
    assert await _audit(client, consent.thread_id) == [
        ("run_started", "local/local"),  # the question first
        ("run_ended", "system"),
        ("run_started", "local/local"),
        ("consent_requested", "system"),
        ("consent_decided", "policy"),
        ("effect_applied", "system"),
        ("run_ended", "system"),
    ]
    thread = (await client.get(f"/v1/threads/{consent.thread_id}")).json()
    assert (thread["consent_policy"], thread["status"]) == ("auto_approve", "idle")


async def test_auto_reject_is_a_dry_run_that_records_the_proposal_and_applies_nothing(
    client: httpx.AsyncClient,
) -> None:
    note = await _note(client)

    events = await after_a_question(
        client,
        {
            "message": "Add a summary of our discussion to my note",
            "note_id": note["note_id"],
            "consent_policy": "auto_reject",
        },
    )

    consent = next(e for e in events if isinstance(e, ConsentEvent))
    assert "note" not in kinds(events)
    assert events[-1].reason == "completed"  # type: ignore[union-attr]
    approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
    assert (approval["status"], approval["decided"]["decided_by"]) == ("rejected", "policy")
    assert approval["proposal"]["proposed_content"].startswith("Retrieval first.")
    versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
    assert len(versions) == 1


async def test_a_threads_policy_is_fixed_when_it_is_created(client: httpx.AsyncClient) -> None:
    first = await chat(client, {"message": "What is RAG?"})

    response = await client.post(
        "/v1/chat",
        json={
            "thread_id": first[0].thread_id,
            "message": "Again",
            "consent_policy": "auto_approve",
        },
    )

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "policy_mismatch"
    thread = (await client.get(f"/v1/threads/{first[0].thread_id}")).json()
    assert thread["consent_policy"] == "ask"


async def test_a_message_can_reject_the_pending_consent_first(client: httpx.AsyncClient) -> None:
    note = await _note(client)
    asked = await after_a_question(
        client,
        {"message": "Add a summary of our discussion to my note", "note_id": note["note_id"]},
    )
    consent = next(e for e in asked if isinstance(e, ConsentEvent))

    events = await chat(
        client,
        {
            "thread_id": consent.thread_id,
            "message": "What is RAG?",
            "on_pending_consent": "reject",
        },
    )

    messages = [e.content for e in events if isinstance(e, MessageEvent)]
    assert messages[0].startswith("OK, I left your notes unchanged.")
    assert "offline model" in messages[1]
    assert events[-1].reason == "completed"  # type: ignore[union-attr]
    approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
    assert (approval["status"], approval["decided"]["decided_by"]) == ("rejected", "local/local")
    assert approval["decided"]["comment"] == "Rejected by a new message."
    versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
    assert len(versions) == 1
