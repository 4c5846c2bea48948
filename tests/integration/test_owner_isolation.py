"""Two API keys, two owners: nobody sees or touches another owner's projects, notes, threads or
consents, and another owner's id answers exactly like an id that does not exist."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

import httpx
import pytest_asyncio

from consentry.schemas.events import ConsentEvent, FinalEvent
from tests.sse import ASK_FOR_SUMMARY, QUESTION, after_a_question, chat, kinds

ALICE = {"Authorization": "Bearer ka"}
BOB = {"Authorization": "Bearer kb"}
ALICE_ELSEWHERE = {"Authorization": "Bearer kc"}  # same user name, another tenant
API_KEYS = "ka=acme:alice,kb=acme:bob,kc=globex:alice"


@dataclass(frozen=True)
class AliceData:
    project_id: str
    note: dict[str, Any]
    thread_id: str
    consent: ConsentEvent


@pytest_asyncio.fixture
async def keyed_client(open_client: Callable[..., Any]) -> AsyncIterator[httpx.AsyncClient]:
    async with open_client(api_keys=API_KEYS) as client:
        yield client


async def _project_with_note(
    client: httpx.AsyncClient, headers: dict[str, str], *, name: str
) -> tuple[str, dict[str, Any]]:
    project = await client.post("/v1/projects", json={"name": name}, headers=headers)
    assert project.status_code == 201, project.text
    project_id = str(project.json()["project_id"])
    note = await client.post(
        f"/v1/projects/{project_id}/notes",
        json={"title": "RAG", "content": "Retrieval-augmented generation uses documents."},
        headers=headers,
    )
    assert note.status_code == 201, note.text
    return project_id, note.json()


async def _consent_pending_for(
    client: httpx.AsyncClient, headers: dict[str, str], *, name: str
) -> AliceData:
    project_id, note = await _project_with_note(client, headers, name=name)
    events = await after_a_question(
        client,
        {"message": ASK_FOR_SUMMARY, "project_id": project_id, "note_id": note["note_id"]},
        headers,
    )
    assert kinds(events)[-2:] == ["consent", "final"]
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    return AliceData(project_id, note, consent.thread_id, consent)


@pytest_asyncio.fixture
async def alice(keyed_client: httpx.AsyncClient) -> AliceData:
    return await _consent_pending_for(keyed_client, ALICE, name="Alice's project")


def _same_answer_as_unknown(
    theirs: httpx.Response, unknown: httpx.Response, *, their_id: str, unknown_id: str
) -> None:
    """Both are 404 with the same code; the bodies differ only in the id that was asked for."""
    assert theirs.status_code == unknown.status_code == 404, (theirs.text, unknown.text)
    assert theirs.json()["error"]["code"] == unknown.json()["error"]["code"]
    assert json.loads(theirs.text.replace(their_id, "<id>")) == json.loads(
        unknown.text.replace(unknown_id, "<id>")
    )


# Authentication


async def test_a_request_without_a_key_is_unauthorized(keyed_client: httpx.AsyncClient) -> None:
    for response in (
        await keyed_client.get("/v1/projects"),
        await keyed_client.get("/v1/threads"),
        await keyed_client.post("/v1/chat", json={"message": "hello"}),
    ):
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
    assert (await keyed_client.get("/v1/threads", headers=ALICE)).json()["threads"] == []


async def test_a_request_with_an_unknown_key_is_unauthorized(
    keyed_client: httpx.AsyncClient,
) -> None:
    for headers in ({"Authorization": "Bearer nope"}, {"Authorization": "Bearer ka-but-longer"}):
        response = await keyed_client.get("/v1/projects", headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"


async def test_a_valid_key_is_accepted(keyed_client: httpx.AsyncClient) -> None:
    response = await keyed_client.get("/v1/projects", headers=ALICE)

    assert response.status_code == 200
    assert [p["name"] for p in response.json()["projects"]] == ["My notes"]


# Projects and notes


async def test_projects_are_listed_only_to_their_owner(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    mine = (await keyed_client.get("/v1/projects", headers=ALICE)).json()["projects"]
    theirs = (await keyed_client.get("/v1/projects", headers=BOB)).json()["projects"]

    assert alice.project_id in [p["project_id"] for p in mine]
    assert [(p["name"], p["is_default"]) for p in theirs] == [("My notes", True)]
    assert {p["project_id"] for p in theirs}.isdisjoint(p["project_id"] for p in mine)


async def test_another_owners_project_answers_like_an_unknown_one(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    unknown = str(uuid4())
    routes: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", "/v1/projects/{}/notes", {}),
        ("POST", "/v1/projects/{}/notes", {"json": {"title": "Mine now", "content": "x"}}),
        ("GET", "/v1/projects/{}/search", {"params": {"q": "retrieval"}}),
    ]

    for method, path, kwargs in routes:
        theirs = await keyed_client.request(
            method, path.format(alice.project_id), headers=BOB, **kwargs
        )
        missing = await keyed_client.request(method, path.format(unknown), headers=BOB, **kwargs)
        _same_answer_as_unknown(theirs, missing, their_id=alice.project_id, unknown_id=unknown)
        assert theirs.json()["error"]["code"] == "project_not_found"

    notes = (
        await keyed_client.get(f"/v1/projects/{alice.project_id}/notes", headers=ALICE)
    ).json()["notes"]
    assert [n["note_id"] for n in notes] == [alice.note["note_id"]]


async def test_another_owners_note_answers_like_an_unknown_one(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    note_id, unknown = alice.note["note_id"], str(uuid4())
    routes: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", "/v1/notes/{}", {}),
        ("GET", "/v1/notes/{}/versions", {}),
        ("PUT", "/v1/notes/{}", {"json": {"version": 1, "content": "Bob was here"}}),
        ("DELETE", "/v1/notes/{}", {}),
    ]

    for method, path, kwargs in routes:
        theirs = await keyed_client.request(method, path.format(note_id), headers=BOB, **kwargs)
        missing = await keyed_client.request(method, path.format(unknown), headers=BOB, **kwargs)
        _same_answer_as_unknown(theirs, missing, their_id=note_id, unknown_id=unknown)
        assert theirs.json()["error"]["code"] == "note_not_found"

    still = (await keyed_client.get(f"/v1/notes/{note_id}", headers=ALICE)).json()
    assert still == alice.note
    versions = (await keyed_client.get(f"/v1/notes/{note_id}/versions", headers=ALICE)).json()
    assert [v["version"] for v in versions["versions"]] == [1]


async def test_search_never_returns_another_owners_notes(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    bob_project, bob_note = await _project_with_note(keyed_client, BOB, name="Bob's project")

    response = await keyed_client.get(
        f"/v1/projects/{bob_project}/search", params={"q": "retrieval"}, headers=BOB
    )

    assert response.status_code == 200
    assert [h["note_id"] for h in response.json()["hits"]] == [bob_note["note_id"]]


async def test_the_same_user_name_in_another_tenant_is_another_owner(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    note = await keyed_client.get(f"/v1/notes/{alice.note['note_id']}", headers=ALICE_ELSEWHERE)
    thread = await keyed_client.get(f"/v1/threads/{alice.thread_id}", headers=ALICE_ELSEWHERE)
    threads = await keyed_client.get("/v1/threads", headers=ALICE_ELSEWHERE)

    assert (note.status_code, note.json()["error"]["code"]) == (404, "note_not_found")
    assert (thread.status_code, thread.json()["error"]["code"]) == (404, "thread_not_found")
    assert threads.json()["threads"] == []


# Threads


async def test_threads_are_listed_only_to_their_owner(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    bob_events = await chat(keyed_client, {"message": "What is retrieval?"}, BOB)
    bob_thread = bob_events[0].thread_id

    alices = (await keyed_client.get("/v1/threads", headers=ALICE)).json()["threads"]
    bobs = (await keyed_client.get("/v1/threads", headers=BOB)).json()["threads"]

    assert [t["thread_id"] for t in alices] == [alice.thread_id]
    assert [t["thread_id"] for t in bobs] == [bob_thread]


async def test_another_owners_thread_answers_like_an_unknown_one(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    unknown = str(uuid4())

    for path in ("/v1/threads/{}", "/v1/threads/{}/messages"):
        theirs = await keyed_client.get(path.format(alice.thread_id), headers=BOB)
        missing = await keyed_client.get(path.format(unknown), headers=BOB)
        _same_answer_as_unknown(theirs, missing, their_id=alice.thread_id, unknown_id=unknown)
        assert theirs.json()["error"]["code"] == "thread_not_found"


async def test_another_owners_thread_cannot_be_continued(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    unknown = str(uuid4())
    body = {"message": "What did Alice ask?"}

    theirs = await keyed_client.post(
        "/v1/chat", json={**body, "thread_id": alice.thread_id}, headers=BOB
    )
    missing = await keyed_client.post("/v1/chat", json={**body, "thread_id": unknown}, headers=BOB)

    _same_answer_as_unknown(theirs, missing, their_id=alice.thread_id, unknown_id=unknown)
    assert theirs.json()["error"]["code"] == "thread_not_found"
    transcript = (
        await keyed_client.get(f"/v1/threads/{alice.thread_id}/messages", headers=ALICE)
    ).json()["messages"]
    assert [m["role"] for m in transcript] == ["user", "assistant", "user", "assistant"]
    assert [transcript[0]["content"], transcript[2]["content"]] == [QUESTION, ASK_FOR_SUMMARY]


async def test_another_owners_note_or_project_cannot_be_used_in_chat(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    unknown = str(uuid4())

    for field, their_id, code in (
        ("note_id", alice.note["note_id"], "note_not_found"),
        ("project_id", alice.project_id, "project_not_found"),
    ):
        body = {"message": ASK_FOR_SUMMARY}
        theirs = await keyed_client.post("/v1/chat", json={**body, field: their_id}, headers=BOB)
        missing = await keyed_client.post("/v1/chat", json={**body, field: unknown}, headers=BOB)
        _same_answer_as_unknown(theirs, missing, their_id=their_id, unknown_id=unknown)
        assert theirs.json()["error"]["code"] == code

    assert (await keyed_client.get("/v1/threads", headers=BOB)).json()["threads"] == []


# Consents


async def _assert_still_pending(client: httpx.AsyncClient, alice: AliceData) -> None:
    thread = (await client.get(f"/v1/threads/{alice.thread_id}", headers=ALICE)).json()
    assert thread["status"] == "awaiting_consent"
    assert thread["pending_consents"] == [alice.consent.model_dump(mode="json")]


async def test_another_owner_cannot_decide_a_consent_through_its_thread(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    unknown = str(uuid4())
    resume = {"approval_id": alice.consent.approval_id, "decision": "approve"}

    theirs = await keyed_client.post(
        "/v1/chat", json={"thread_id": alice.thread_id, "resume": resume}, headers=BOB
    )
    missing = await keyed_client.post(
        "/v1/chat", json={"thread_id": unknown, "resume": resume}, headers=BOB
    )

    _same_answer_as_unknown(theirs, missing, their_id=alice.thread_id, unknown_id=unknown)
    assert theirs.json()["error"]["code"] == "thread_not_found"
    await _assert_still_pending(keyed_client, alice)


async def test_another_owners_approval_id_answers_like_an_unknown_one(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    bob = await _consent_pending_for(keyed_client, BOB, name="Bob's project")
    unknown = uuid4().hex

    def resume(approval_id: str) -> dict[str, Any]:
        return {
            "thread_id": bob.thread_id,
            "resume": {"approval_id": approval_id, "decision": "approve"},
        }

    theirs = await keyed_client.post(
        "/v1/chat", json=resume(alice.consent.approval_id), headers=BOB
    )
    missing = await keyed_client.post("/v1/chat", json=resume(unknown), headers=BOB)

    _same_answer_as_unknown(theirs, missing, their_id=alice.consent.approval_id, unknown_id=unknown)
    assert theirs.json()["error"]["code"] == "approval_not_found"
    await _assert_still_pending(keyed_client, alice)
    note = (await keyed_client.get(f"/v1/notes/{alice.note['note_id']}", headers=ALICE)).json()
    assert note["version"] == 1


async def test_the_owner_can_still_decide_after_another_owners_attempts(
    keyed_client: httpx.AsyncClient, alice: AliceData
) -> None:
    resume = {"approval_id": alice.consent.approval_id, "decision": "approve"}
    refused = await keyed_client.post(
        "/v1/chat", json={"thread_id": alice.thread_id, "resume": resume}, headers=BOB
    )
    assert refused.status_code == 404

    events = await chat(keyed_client, {"thread_id": alice.thread_id, "resume": resume}, ALICE)

    assert kinds(events) == ["run_started", "step", "step", "note", "message", "final"]
    final = events[-1]
    assert isinstance(final, FinalEvent)
    assert final.reason == "completed"
    note = (await keyed_client.get(f"/v1/notes/{alice.note['note_id']}", headers=ALICE)).json()
    assert (note["version"], note["content"]) == (2, alice.consent.proposal["proposed_content"])
