"""The tutor's consent round trips, as a client sees them: exact event sequences and what is
stored afterwards (note versions, transcript, thread status)."""

from __future__ import annotations

from typing import Any

import httpx

from consentry.schemas.events import (
    ConsentEvent,
    FinalEvent,
    MessageEvent,
    NoteEvent,
    StepEvent,
    TokenEvent,
)
from tests.sse import TUTOR_ASKED, after_a_question, assert_numbered, chat, kinds

ASK_STEPS = TUTOR_ASKED


async def _project_with_note(client: httpx.AsyncClient) -> tuple[str, dict[str, Any]]:
    project = (await client.post("/v1/projects", json={"name": "Learning"})).json()
    note = (
        await client.post(
            f"/v1/projects/{project['project_id']}/notes",
            json={"title": "RAG", "content": "Retrieval-augmented generation uses documents."},
        )
    ).json()
    return project["project_id"], note


async def _ask_for_summary(client: httpx.AsyncClient) -> tuple[str, dict[str, Any], ConsentEvent]:
    project_id, note = await _project_with_note(client)
    first = await chat(
        client,
        {"message": "What is retrieval?", "project_id": project_id, "note_id": note["note_id"]},
    )
    thread_id = first[0].thread_id
    events = await chat(
        client,
        {
            "thread_id": thread_id,
            "message": "Add a summary of our discussion to my note",
            "note_id": note["note_id"],
        },
    )
    assert kinds(events) == ASK_STEPS
    assert [e.node for e in events if e.type == "step"] == [
        "analyze_message",
        "draft_note_edit",
        "request_note_edit_consent",
    ]
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    final = events[-1]
    assert isinstance(final, FinalEvent)
    assert final.reason == "interrupted"
    return thread_id, note, consent


async def test_an_answer_streams_tokens_then_the_message(client: httpx.AsyncClient) -> None:
    project_id, _ = await _project_with_note(client)
    events = await chat(client, {"message": "What is retrieval?", "project_id": project_id})

    assert kinds(events) == ["run_started", "step", "step", "message", "final"]
    assert_numbered(events, first=1)
    assert len({e.run_id for e in events}) == 1
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    message = next(e for e in events if isinstance(e, MessageEvent))
    assert len(tokens) > 3
    assert {t.message_id for t in tokens} == {message.message_id}
    assert "".join(t.delta for t in tokens) == message.content
    assert "offline model" in message.content
    assert "\u201cRAG\u201d" in message.content  # grounded in the project's note found by search
    assert events[-1].reason == "completed"  # type: ignore[union-attr]


async def test_consent_carries_the_full_proposal_and_a_diff(client: httpx.AsyncClient) -> None:
    thread_id, note, consent = await _ask_for_summary(client)

    assert consent.kind == "note_edit"
    assert consent.allowed_decisions == ["approve", "edit", "reject"]
    assert len(consent.approval_id) == 32
    proposal = consent.proposal
    assert proposal["note_id"] == note["note_id"]
    assert proposal["base_version"] == 1
    assert proposal["base_content"] == note["content"]
    assert proposal["proposed_content"].startswith(note["content"])
    assert "## Summary of our discussion" in proposal["proposed_content"]
    assert "+## Summary of our discussion" in proposal["diff"]
    assert consent.expires_at > consent.ts

    thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    assert thread["status"] == "awaiting_consent"
    assert thread["last_reason"] == "interrupted"
    assert thread["pending_consents"] == [consent.model_dump(mode="json")]
    untouched = (await client.get(f"/v1/notes/{note['note_id']}")).json()
    assert untouched["version"] == 1


async def test_approve_writes_the_proposed_content_as_a_new_version(
    client: httpx.AsyncClient,
) -> None:
    thread_id, note, consent = await _ask_for_summary(client)

    events = await chat(
        client,
        {
            "thread_id": thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": "approve"},
        },
    )

    assert kinds(events) == ["run_started", "step", "step", "note", "message", "final"]
    # The consent node runs again with the decision: its step says so, not "Asking ...".
    assert [(e.node, e.label) for e in events if isinstance(e, StepEvent)] == [
        ("request_note_edit_consent", "Your decision arrived"),
        ("apply_note_edit", "Writing your note"),
    ]
    assert events[0].seq == consent.seq + 2  # the interrupted run's final came in between
    note_event = next(e for e in events if isinstance(e, NoteEvent))
    assert note_event.note_id == note["note_id"]
    assert note_event.version == 2
    assert note_event.content == consent.proposal["proposed_content"]
    assert events[-1].reason == "completed"  # type: ignore[union-attr]

    versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
    assert [(v["version"], v["author"], v["approval_id"]) for v in versions] == [
        (1, "user", None),
        (2, "assistant", consent.approval_id),
    ]
    assert versions[1]["content"] == consent.proposal["proposed_content"]
    thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    assert (thread["status"], thread["last_reason"], thread["pending_consents"]) == (
        "idle",
        "completed",
        [],
    )
    transcript = (await client.get(f"/v1/threads/{thread_id}/messages")).json()["messages"]
    assert [m["content"] for m in transcript[2:]] == [
        "Add a summary of our discussion to my note",
        "I drafted an edit of your note \u201cRAG\u201d.",  # (before it asks)
        "Done: I updated \u201cRAG\u201d (version 2).",
    ]
    assert [m["role"] for m in transcript] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "assistant",
    ]


async def test_edit_writes_the_persons_version_instead(client: httpx.AsyncClient) -> None:
    thread_id, note, consent = await _ask_for_summary(client)
    mine = "Retrieval-augmented generation uses documents.\n\nMy own summary.\n"

    events = await chat(
        client,
        {
            "thread_id": thread_id,
            "resume": {
                "approval_id": consent.approval_id,
                "decision": "edit",
                "edited": {"content": mine},
                "comment": "shorter please",
            },
        },
    )

    assert kinds(events) == ["run_started", "step", "step", "note", "message", "final"]
    note_event = next(e for e in events if isinstance(e, NoteEvent))
    assert (note_event.version, note_event.content) == (2, mine)
    stored = (await client.get(f"/v1/notes/{note['note_id']}")).json()
    assert (stored["version"], stored["content"]) == (2, mine)
    message = next(e for e in events if isinstance(e, MessageEvent))
    assert message.content == "Done: I saved your edit to \u201cRAG\u201d (version 2)."


async def test_reject_writes_nothing(client: httpx.AsyncClient) -> None:
    thread_id, note, consent = await _ask_for_summary(client)

    events = await chat(
        client,
        {
            "thread_id": thread_id,
            "resume": {
                "approval_id": consent.approval_id,
                "decision": "reject",
                "comment": "not now",
            },
        },
    )

    assert kinds(events) == ["run_started", "step", "step", "message", "final"]
    assert [e.node for e in events if e.type == "step"] == [
        "request_note_edit_consent",
        "skip_note_edit",
    ]
    message = next(e for e in events if isinstance(e, MessageEvent))
    assert message.content == "OK, I left your notes unchanged. You said: \u201cnot now\u201d."
    versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
    assert [v["version"] for v in versions] == [1]
    thread = (await client.get(f"/v1/threads/{thread_id}")).json()
    assert (thread["status"], thread["pending_consents"]) == ("idle", [])


async def test_approving_without_a_note_creates_one(client: httpx.AsyncClient) -> None:
    first = await after_a_question(client, {"message": "Please save our discussion to a note"})
    assert kinds(first) == ASK_STEPS
    assert [e.node for e in first if e.type == "step"] == [
        "analyze_message",
        "draft_note_creation",
        "request_note_create_consent",
    ]
    consent = next(e for e in first if isinstance(e, ConsentEvent))
    assert consent.kind == "note_create"
    assert set(consent.proposal) == {"project_id", "title", "content"}

    events = await chat(
        client,
        {
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, "decision": "approve"},
        },
    )

    assert kinds(events) == ["run_started", "step", "step", "note", "message", "final"]
    assert [e.node for e in events if e.type == "step"] == [
        "request_note_create_consent",
        "create_note",
    ]
    note_event = next(e for e in events if isinstance(e, NoteEvent))
    assert note_event.version == 1
    assert note_event.title == "Summary of our discussion"
    assert note_event.content == consent.proposal["content"]
    projects = (await client.get("/v1/projects")).json()["projects"]
    assert [(p["name"], p["is_default"]) for p in projects] == [("My notes", True)]
    assert note_event.project_id == projects[0]["project_id"] == consent.proposal["project_id"]


async def test_a_search_request_answers_with_titles_and_snippets(
    client: httpx.AsyncClient,
) -> None:
    project_id, _ = await _project_with_note(client)

    events = await chat(
        client, {"message": "search my notes for retrieval", "project_id": project_id}
    )

    assert kinds(events) == ["run_started", "step", "step", "step", "message", "final"]
    assert [e.node for e in events if e.type == "step"] == [
        "analyze_message",
        "search_notes",
        "report_search_results",
    ]
    message = next(e for e in events if isinstance(e, MessageEvent))
    assert message.content.startswith("I found 1 note matching \u201cretrieval\u201d:")
    assert "- In \u201cRAG\u201d: Retrieval-augmented generation uses documents." in message.content
