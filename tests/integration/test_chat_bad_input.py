"""Every way ``POST /v1/chat`` refuses a request: the HTTP status, the error body's stable code,
and that nothing stored changed (threads, pending consent, transcript, note versions). A refused
resume must never reach LangGraph: the consent it named stays pending and can still be decided.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from consentry.schemas.events import ConsentEvent, NoteEvent
from consentry.storage.tables import threads
from tests.conftest import ManualClock
from tests.sse import TUTOR_ASKED, after_a_question, chat, kinds

UNKNOWN_ID = "00000000-0000-4000-8000-000000000000"
UNKNOWN_APPROVAL_ID = "0" * 32
SUMMARY_REQUEST = "Add a summary of our discussion to my note"
APPROVED_STEPS = ["run_started", "step", "step", "note", "message", "final"]
ANSWER_STEPS = ["run_started", "step", "step", "message", "final"]


@dataclass(frozen=True)
class Pending:
    """A thread waiting for a decision on a note edit, and ids to build bad requests from."""

    thread_id: str
    project_id: str
    note_id: str
    consent: ConsentEvent
    other_project_id: str
    other_note_id: str

    @property
    def approval_id(self) -> str:
        return self.consent.approval_id

    def resume(self, **decision: Any) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "resume": {"approval_id": self.approval_id, **decision},
        }


async def _create_note(client: httpx.AsyncClient, project: str, title: str) -> dict[str, Any]:
    project_id = (await client.post("/v1/projects", json={"name": project})).json()["project_id"]
    response = await client.post(
        f"/v1/projects/{project_id}/notes",
        json={"title": title, "content": f"{title} uses documents."},
    )
    assert response.status_code == 201, response.text
    note: dict[str, Any] = response.json()
    return note


async def _pending_consent(client: httpx.AsyncClient) -> Pending:
    note = await _create_note(client, "Learning", "RAG")
    other = await _create_note(client, "Elsewhere", "Cooking")
    first = await chat(
        client,
        {
            "message": "What is retrieval?",
            "project_id": note["project_id"],
            "note_id": note["note_id"],
        },
    )
    thread_id = first[0].thread_id
    events = await chat(
        client, {"thread_id": thread_id, "message": SUMMARY_REQUEST, "note_id": note["note_id"]}
    )
    assert kinds(events) == TUTOR_ASKED
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    return Pending(
        thread_id=thread_id,
        project_id=note["project_id"],
        note_id=note["note_id"],
        consent=consent,
        other_project_id=other["project_id"],
        other_note_id=other["note_id"],
    )


async def _stored(client: httpx.AsyncClient, thread_id: str, note_id: str) -> dict[str, Any]:
    """Everything a refused request must leave as it was, read through the API."""

    async def get(path: str) -> Any:
        response = await client.get(path)
        assert response.status_code == 200, response.text
        return response.json()

    return {
        "threads": await get("/v1/threads"),
        "thread": await get(f"/v1/threads/{thread_id}"),
        "transcript": await get(f"/v1/threads/{thread_id}/messages"),
        "note": await get(f"/v1/notes/{note_id}"),
        "versions": await get(f"/v1/notes/{note_id}/versions"),
    }


def _error_of(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert the one error body and return its ``error`` object."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert list(body) == ["error"]
    error: dict[str, Any] = body["error"]
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == code, error
    assert isinstance(error["message"], str)
    assert error["message"]
    assert isinstance(error["details"], dict)
    return error


async def _approve(client: httpx.AsyncClient, pending: Pending) -> list[Any]:
    events = await chat(client, pending.resume(decision="approve"))
    assert kinds(events) == APPROVED_STEPS
    assert events[-1].reason == "completed"
    return events


BadBody = Callable[[Pending], dict[str, Any]]

REFUSED_REQUESTS: list[Any] = [
    pytest.param(
        lambda p: {"thread_id": UNKNOWN_ID, "message": "Hello"},
        404,
        "thread_not_found",
        id="message-to-unknown-thread-is-thread_not_found",
    ),
    pytest.param(
        lambda p: {
            "thread_id": UNKNOWN_ID,
            "resume": {"approval_id": p.approval_id, "decision": "approve"},
        },
        404,
        "thread_not_found",
        id="resume-on-unknown-thread-is-thread_not_found",
    ),
    pytest.param(
        lambda p: {"message": "Hello", "note_id": UNKNOWN_ID},
        404,
        "note_not_found",
        id="new-thread-with-unknown-note-is-note_not_found",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "note_id": UNKNOWN_ID, "message": "Hello"},
        404,
        "note_not_found",
        id="thread-with-unknown-note-is-note_not_found",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "note_id": p.other_note_id, "message": "Hello"},
        404,
        "note_not_found",
        id="note-of-another-project-is-note_not_found",
    ),
    pytest.param(
        lambda p: {"message": "Hello", "project_id": UNKNOWN_ID},
        404,
        "project_not_found",
        id="new-thread-in-unknown-project-is-project_not_found",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "project_id": UNKNOWN_ID, "message": "Hello"},
        404,
        "project_not_found",
        id="thread-with-unknown-project-is-project_not_found",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "project_id": p.other_project_id, "message": "Hi"},
        422,
        "project_mismatch",
        id="thread-with-another-project-is-project_mismatch",
    ),
    pytest.param(
        lambda p: {"message": "Hello", "graph": "no-such-graph"},
        422,
        "unknown_graph",
        id="new-thread-on-unknown-graph-is-unknown_graph",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "graph": "no-such-graph", "message": "Hello"},
        422,
        "graph_mismatch",
        id="thread-with-another-graph-is-graph_mismatch",
    ),
    pytest.param(
        lambda p: {
            "thread_id": p.thread_id,
            "message": "Hello",
            "resume": {"approval_id": p.approval_id, "decision": "approve"},
        },
        422,
        "request_invalid",
        id="both-message-and-resume-is-request_invalid",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id},
        422,
        "request_invalid",
        id="neither-message-nor-resume-is-request_invalid",
    ),
    pytest.param(lambda p: {}, 422, "request_invalid", id="empty-object-is-request_invalid"),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "message": " \n\t "},
        422,
        "empty_message",
        id="blank-message-is-empty_message",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "message": ""},
        422,
        "empty_message",
        id="empty-message-is-empty_message",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "message": 42},
        422,
        "request_invalid",
        id="non-string-message-is-request_invalid",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "message": "Hello", "colour": "red"},
        422,
        "request_invalid",
        id="unknown-field-is-request_invalid",
    ),
    pytest.param(
        lambda p: {"resume": {"approval_id": p.approval_id, "decision": "approve"}},
        422,
        "request_invalid",
        id="resume-without-thread-is-request_invalid",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "resume": []},
        422,
        "request_invalid",
        id="empty-resume-list-is-request_invalid",
    ),
    pytest.param(
        lambda p: {
            "thread_id": p.thread_id,
            "resume": [
                {"approval_id": p.approval_id, "decision": "approve"},
                {"approval_id": p.approval_id, "decision": "reject"},
            ],
        },
        422,
        "duplicate_decision",
        id="resume-list-deciding-a-consent-twice-is-duplicate_decision",
    ),
    pytest.param(
        lambda p: {
            "thread_id": p.thread_id,
            "resume": {"approval_id": UNKNOWN_APPROVAL_ID, "decision": "approve"},
        },
        404,
        "approval_not_found",
        id="resume-with-unknown-approval-is-approval_not_found",
    ),
    pytest.param(
        lambda p: p.resume(decision="edit"),
        422,
        "request_invalid",
        id="edit-without-edited-is-request_invalid",
    ),
    pytest.param(
        lambda p: p.resume(decision="approve", edited={"content": "Mine."}),
        422,
        "request_invalid",
        id="approve-with-edited-is-request_invalid",
    ),
    pytest.param(
        lambda p: p.resume(decision="maybe"),
        422,
        "unknown_decision",
        id="unknown-decision-is-unknown_decision",
    ),
    pytest.param(
        lambda p: p.resume(decision="approve", reason="because"),
        422,
        "request_invalid",
        id="unknown-resume-field-is-request_invalid",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "resume": {"decision": "approve"}},
        422,
        "request_invalid",
        id="resume-without-approval-id-is-request_invalid",
    ),
    pytest.param(
        lambda p: p.resume(decision="edit", edited={"content": "   "}),
        422,
        "invalid_edit",
        id="edit-with-blank-content-is-invalid_edit",
    ),
    pytest.param(
        lambda p: p.resume(decision="edit", edited={}),
        422,
        "invalid_edit",
        id="edit-without-content-is-invalid_edit",
    ),
    pytest.param(
        lambda p: p.resume(decision="edit", edited={"content": "Mine.", "colour": "red"}),
        422,
        "invalid_edit",
        id="edit-with-extra-field-is-invalid_edit",
    ),
    pytest.param(
        lambda p: p.resume(decision="edit", edited={"content": "Mine.", "title": ""}),
        422,
        "invalid_edit",
        id="edit-with-empty-title-is-invalid_edit",
    ),
    pytest.param(
        lambda p: {"thread_id": p.thread_id, "message": "What is retrieval?"},
        409,
        "consent_pending",
        id="message-while-consent-pending-is-consent_pending",
    ),
]


@pytest.mark.parametrize(("build", "status", "code"), REFUSED_REQUESTS)
async def test_a_refused_request_changes_nothing(
    client: httpx.AsyncClient, build: BadBody, status: int, code: str
) -> None:
    pending = await _pending_consent(client)
    before = await _stored(client, pending.thread_id, pending.note_id)

    response = await client.post("/v1/chat", json=build(pending))

    _error_of(response, status, code)
    assert await _stored(client, pending.thread_id, pending.note_id) == before
    assert before["thread"]["status"] == "awaiting_consent"
    assert before["thread"]["pending_consents"] == [pending.consent.model_dump(mode="json")]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"message": ', id="cut-short"),
        # UTF-8 text that Python's JSON parser decodes as UTF-16 (it guesses by the NUL bytes) and
        # fails on: FastAPI's 400 "error parsing the body", which the document does not list.
        pytest.param(b"\x00a\x00bc", id="taken-for-utf-16"),
    ],
)
async def test_malformed_json_is_refused_as_malformed_json(
    client: httpx.AsyncClient, body: bytes
) -> None:
    pending = await _pending_consent(client)
    before = await _stored(client, pending.thread_id, pending.note_id)

    response = await client.post(
        "/v1/chat", content=body, headers={"content-type": "application/json"}
    )

    _error_of(response, 422, "malformed_json")
    assert await _stored(client, pending.thread_id, pending.note_id) == before


async def test_error_details_name_what_was_not_found(client: httpx.AsyncClient) -> None:
    pending = await _pending_consent(client)

    thread = await client.post("/v1/chat", json={"thread_id": UNKNOWN_ID, "message": "Hi"})
    graph = await client.post("/v1/chat", json={"graph": "no-such-graph", "message": "Hi"})
    approval = await client.post(
        "/v1/chat",
        json={
            "thread_id": pending.thread_id,
            "resume": {"approval_id": UNKNOWN_APPROVAL_ID, "decision": "approve"},
        },
    )

    assert _error_of(thread, 404, "thread_not_found")["details"] == {"thread_id": UNKNOWN_ID}
    assert _error_of(graph, 422, "unknown_graph")["details"] == {
        "graph": "no-such-graph",
        "available": ["tutor"],
    }
    assert _error_of(approval, 404, "approval_not_found")["details"] == {
        "approval_id": UNKNOWN_APPROVAL_ID
    }


async def test_a_message_while_a_consent_is_pending_names_the_consent(
    client: httpx.AsyncClient,
) -> None:
    pending = await _pending_consent(client)

    response = await client.post(
        "/v1/chat", json={"thread_id": pending.thread_id, "message": "What is retrieval?"}
    )

    error = _error_of(response, 409, "consent_pending")
    assert error["details"] == {
        "approval_id": pending.approval_id,
        "pending": [pending.approval_id],
    }


async def test_a_resume_on_a_thread_without_pending_consent_is_no_pending_consent(
    client: httpx.AsyncClient,
) -> None:
    note = await _create_note(client, "Learning", "RAG")
    first = await chat(client, {"message": "What is retrieval?", "project_id": note["project_id"]})
    assert kinds(first) == ANSWER_STEPS
    thread_id = first[0].thread_id
    before = await _stored(client, thread_id, note["note_id"])

    response = await client.post(
        "/v1/chat",
        json={
            "thread_id": thread_id,
            "resume": {"approval_id": UNKNOWN_APPROVAL_ID, "decision": "approve"},
        },
    )

    error = _error_of(response, 409, "no_pending_consent")
    assert error["details"] == {"thread_id": thread_id}
    assert await _stored(client, thread_id, note["note_id"]) == before
    assert (before["thread"]["status"], before["thread"]["last_reason"]) == ("idle", "completed")


async def test_an_approval_of_another_thread_is_approval_not_pending(
    client: httpx.AsyncClient,
) -> None:
    mine = await _pending_consent(client)
    other_events = await after_a_question(
        client, {"message": SUMMARY_REQUEST, "project_id": mine.other_project_id}
    )
    other = next(e for e in other_events if isinstance(e, ConsentEvent))
    assert other.thread_id != mine.thread_id
    before_mine = await _stored(client, mine.thread_id, mine.note_id)
    before_other = (await client.get(f"/v1/threads/{other.thread_id}")).json()

    response = await client.post(
        "/v1/chat",
        json={
            "thread_id": mine.thread_id,
            "resume": {"approval_id": other.approval_id, "decision": "approve"},
        },
    )

    _error_of(response, 409, "approval_not_pending")
    assert await _stored(client, mine.thread_id, mine.note_id) == before_mine
    assert (await client.get(f"/v1/threads/{other.thread_id}")).json() == before_other
    assert before_other["pending_consents"] == [other.model_dump(mode="json")]
    await _approve(client, mine)  # both consents are still open to their own threads
    approved_other = await chat(
        client,
        {
            "thread_id": other.thread_id,
            "resume": {"approval_id": other.approval_id, "decision": "approve"},
        },
    )
    assert kinds(approved_other) == APPROVED_STEPS


async def test_a_second_resume_of_the_same_approval_is_already_decided_and_writes_once(
    client: httpx.AsyncClient,
) -> None:
    pending = await _pending_consent(client)
    await _approve(client, pending)
    after_first = await _stored(client, pending.thread_id, pending.note_id)

    again = await client.post("/v1/chat", json=pending.resume(decision="approve"))

    error = _error_of(again, 409, "already_decided")
    assert error["details"]["approval_id"] == pending.approval_id
    assert await _stored(client, pending.thread_id, pending.note_id) == after_first
    versions = after_first["versions"]["versions"]
    assert [(v["version"], v["approval_id"]) for v in versions] == [
        (1, None),
        (2, pending.approval_id),
    ]


async def test_a_double_click_resumes_once_and_the_other_click_is_already_decided(
    client: httpx.AsyncClient,
) -> None:
    pending = await _pending_consent(client)

    first, second = await asyncio.gather(
        client.post("/v1/chat", json=pending.resume(decision="approve")),
        client.post("/v1/chat", json=pending.resume(decision="approve")),
    )

    refused = [r for r in (first, second) if r.status_code != 200]
    assert len(refused) == 1, [first.status_code, second.status_code]
    _error_of(refused[0], 409, "already_decided")
    versions = (await client.get(f"/v1/notes/{pending.note_id}/versions")).json()["versions"]
    assert [(v["version"], v["approval_id"]) for v in versions] == [
        (1, None),
        (2, pending.approval_id),
    ]
    thread = (await client.get(f"/v1/threads/{pending.thread_id}")).json()
    assert (thread["status"], thread["last_reason"], thread["pending_consents"]) == (
        "idle",
        "completed",
        [],
    )


@pytest.mark.parametrize(
    "edited",
    [{"content": "   "}, {}, {"content": "Mine.", "colour": "red"}],
    ids=["blank-content", "no-content", "extra-field"],
)
async def test_an_invalid_edit_leaves_the_consent_pending_and_approvable(
    client: httpx.AsyncClient, edited: dict[str, Any]
) -> None:
    pending = await _pending_consent(client)

    response = await client.post("/v1/chat", json=pending.resume(decision="edit", edited=edited))

    error = _error_of(response, 422, "invalid_edit")
    assert error["details"]["errors"]
    thread = (await client.get(f"/v1/threads/{pending.thread_id}")).json()
    assert thread["status"] == "awaiting_consent"
    assert thread["pending_consents"] == [pending.consent.model_dump(mode="json")]
    events = await _approve(client, pending)
    note = next(e for e in events if isinstance(e, NoteEvent))
    assert (note.version, note.content) == (2, pending.consent.proposal["proposed_content"])


async def test_refused_resumes_never_reach_the_graph(client: httpx.AsyncClient) -> None:
    pending = await _pending_consent(client)
    before = await _stored(client, pending.thread_id, pending.note_id)
    refused = [
        (pending.resume(decision="edit", edited={"content": "   "}), 422, "invalid_edit"),
        (pending.resume(decision="edit", edited={}), 422, "invalid_edit"),
        (pending.resume(decision="edit"), 422, "request_invalid"),
        (pending.resume(decision="maybe"), 422, "unknown_decision"),
        (
            {
                "thread_id": pending.thread_id,
                "resume": {"approval_id": UNKNOWN_APPROVAL_ID, "decision": "reject"},
            },
            404,
            "approval_not_found",
        ),
    ]

    for body, status, code in refused:
        _error_of(await client.post("/v1/chat", json=body), status, code)

    after = await _stored(client, pending.thread_id, pending.note_id)
    assert after == before
    assert after["thread"]["status"] == "awaiting_consent"
    assert [m["content"] for m in after["transcript"]["messages"]][-2] == SUMMARY_REQUEST
    # The graph still waits at the same interrupt: the first resume that passes runs from it, and
    # the thread's event numbering shows no run started in between.
    events = await _approve(client, pending)
    assert events[0].seq == pending.consent.seq + 2
    assert [e.node for e in events if e.type == "step"] == [
        "request_note_edit_consent",
        "apply_note_edit",
    ]


async def test_an_expired_consent_is_refused_and_the_thread_takes_new_messages(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    pending = await _pending_consent(client)
    clock.advance(seconds=86_400)

    response = await client.post("/v1/chat", json=pending.resume(decision="approve"))

    error = _error_of(response, 410, "consent_expired")
    assert error["details"] == {
        "approval_id": pending.approval_id,
        "expired_at": pending.consent.expires_at.isoformat(),
    }
    thread = (await client.get(f"/v1/threads/{pending.thread_id}")).json()
    assert (thread["status"], thread["pending_consents"]) == ("idle", [])
    again = await client.post("/v1/chat", json=pending.resume(decision="approve"))
    _error_of(again, 410, "consent_expired")
    versions = (await client.get(f"/v1/notes/{pending.note_id}/versions")).json()["versions"]
    assert [v["version"] for v in versions] == [1]

    services = client.services  # type: ignore[attr-defined]
    await services.expiry.sweep()  # the 410 also woke the background sweeper: one of them
    await services.executor.wait_for_runs()  # takes the expired path; wait for it
    events = await chat(client, {"thread_id": pending.thread_id, "message": "What is RAG?"})

    # The expired consent's path runs first if the sweeper has not run it yet.
    assert kinds(events)[-2:] == ["message", "final"]
    assert events[-1].reason == "completed"
    transcript = (await client.get(f"/v1/threads/{pending.thread_id}/messages")).json()
    assert [(m["role"], m["content"]) for m in transcript["messages"][-2:]] == [
        ("user", "What is RAG?"),
        ("assistant", events[-2].content),
    ]
    thread = (await client.get(f"/v1/threads/{pending.thread_id}")).json()
    assert (thread["status"], thread["last_reason"]) == ("idle", "completed")


async def test_a_decision_on_an_expired_consent_is_410_even_while_a_run_holds_the_thread(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    """The sweeper's expired path may hold the thread when a late decision arrives: the client
    is told the consent expired, not merely that a run is going."""
    pending = await _pending_consent(client)
    clock.advance(seconds=86_400)
    services = client.services  # type: ignore[attr-defined]
    async with services.db.write() as conn:  # as the expired path's claim leaves it
        await conn.execute(
            sa.update(threads).where(threads.c.id == pending.thread_id).values(status="running")
        )

    response = await client.post("/v1/chat", json=pending.resume(decision="approve"))

    error = _error_of(response, 410, "consent_expired")
    assert error["details"]["approval_id"] == pending.approval_id


async def test_a_consent_expires_after_the_configured_ttl_and_not_before(
    open_client: Callable[..., Any], clock: ManualClock
) -> None:
    async with open_client(consent_ttl_seconds=60) as client:
        pending = await _pending_consent(client)
        clock.advance(seconds=59)
        still_open = (await client.get(f"/v1/threads/{pending.thread_id}")).json()
        clock.advance(seconds=1)

        response = await client.post("/v1/chat", json=pending.resume(decision="approve"))

        assert still_open["status"] == "awaiting_consent"
        assert still_open["pending_consents"] == [pending.consent.model_dump(mode="json")]
        _error_of(response, 410, "consent_expired")
        thread = (await client.get(f"/v1/threads/{pending.thread_id}")).json()
        assert (thread["status"], thread["pending_consents"]) == ("idle", [])


async def test_a_message_longer_than_the_limit_is_message_too_long(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(max_message_chars=50) as client:
        pending = await _pending_consent(client)  # its messages are shorter than 50 characters
        await _approve(client, pending)
        before = await _stored(client, pending.thread_id, pending.note_id)

        on_thread = await client.post(
            "/v1/chat", json={"thread_id": pending.thread_id, "message": "x" * 51}
        )
        new_thread = await client.post("/v1/chat", json={"message": "x" * 51})

        for response in (on_thread, new_thread):
            error = _error_of(response, 422, "message_too_long")
            assert error["details"] == {"limit": "max_message_chars", "max": 50}
        assert await _stored(client, pending.thread_id, pending.note_id) == before
        at_limit = await chat(client, {"thread_id": pending.thread_id, "message": "y" * 50})
        assert at_limit[-1].reason == "completed"
