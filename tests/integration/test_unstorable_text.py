"""Text no database can store (a NUL character, a lone surrogate) is refused with the same 422
on SQLite and PostgreSQL, wherever it is in the body, and nothing stored changes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.sse import ask_for_note_edit, chat


async def _project(client: httpx.AsyncClient) -> str:
    project_id: str = (await client.get("/v1/projects")).json()["projects"][0]["project_id"]
    return project_id


def _assert_unstorable(response: httpx.Response, where: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "unstorable_text"
    assert where in error["message"]


@pytest.mark.parametrize("escaped", ["a\\u0000b", "\\ud800"])  # JSON escapes, sent as such
async def test_a_message_with_unstorable_text_is_refused_before_a_run_starts(
    client: httpx.AsyncClient, escaped: str
) -> None:
    response = await client.post(
        "/v1/chat",
        content=f'{{"message": "Hello {escaped}"}}',
        headers={"Content-Type": "application/json"},
    )

    _assert_unstorable(response, "message")
    assert (await client.get("/v1/threads")).json()["threads"] == []


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("notes", {"title": "T\x00", "content": "body"}),
        ("notes", {"title": "T", "content": "line\x00"}),
    ],
)
async def test_a_note_with_unstorable_text_is_refused_and_nothing_is_created(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> None:
    project_id = await _project(client)

    response = await client.post(f"/v1/projects/{project_id}/{path}", json=body)

    _assert_unstorable(response, "t")
    assert (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"] == []


async def test_a_nul_deep_in_an_edit_is_refused_and_the_consent_stays_pending(
    client: httpx.AsyncClient,
) -> None:
    note, asked = await ask_for_note_edit(client)
    consent = asked[-2]
    edit = {"decision": "edit", "edited": {"content": "Mine\x00.\n"}}

    by_inbox = await client.post(f"/v1/approvals/{consent.approval_id}/decision", json=edit)
    by_chat = await client.post(
        "/v1/chat",
        json={
            "thread_id": consent.thread_id,
            "resume": {"approval_id": consent.approval_id, **edit},
        },
    )
    updated = await client.put(
        f"/v1/notes/{note['note_id']}", json={"version": 1, "content": "x\x00"}
    )

    _assert_unstorable(by_inbox, "edited.content")
    _assert_unstorable(by_chat, "resume.edited.content")
    _assert_unstorable(updated, "content")
    approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
    assert approval["status"] == "pending"
    versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
    assert [v["version"] for v in versions] == [1]


INVALID_UTF8 = b'{"message": "caf\xe9 \xff"}'  # Latin-1 bytes, not UTF-8


async def test_a_body_that_is_not_utf8_is_refused_as_unstorable_text(
    client: httpx.AsyncClient,
) -> None:
    note, asked = await ask_for_note_edit(client)
    consent = asked[-2]
    headers = {"Content-Type": "application/json"}
    bodies = {
        "/v1/chat": INVALID_UTF8,
        f"/v1/projects/{note['project_id']}/notes": b'{"title": "\xff", "content": ""}',
        f"/v1/approvals/{consent.approval_id}/decision": (
            b'{"decision": "edit", "edited": {"content": "\xc3"}}'
        ),
    }

    for path, body in bodies.items():
        response = await client.post(path, content=body, headers=headers)

        _assert_unstorable(response, "UTF-8")
    assert len((await client.get("/v1/threads")).json()["threads"]) == 1
    notes = (await client.get(f"/v1/projects/{note['project_id']}/notes")).json()["notes"]
    assert [n["note_id"] for n in notes] == [note["note_id"]]
    approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
    assert approval["status"] == "pending"


async def test_a_nul_in_a_query_parameter_or_an_id_is_refused_on_both_databases(
    client: httpx.AsyncClient,
) -> None:
    note, asked = await ask_for_note_edit(client)
    thread_id = asked[0].thread_id

    search = await client.get(
        f"/v1/projects/{note['project_id']}/search", params={"q": "retrieval\x00"}
    )
    thread = await client.get(f"/v1/threads/{thread_id[:8]}%00")
    approval = await client.get("/v1/approvals/a%00b")
    stream = await client.get(f"/v1/threads/{thread_id}/stream", params={"last_event_id": "1\x00"})

    _assert_unstorable(search, "query string")
    _assert_unstorable(thread, "URL path")
    _assert_unstorable(approval, "URL path")
    _assert_unstorable(stream, "query string")
    found = await client.get(f"/v1/projects/{note['project_id']}/search", params={"q": "retrieval"})
    assert [hit["note_id"] for hit in found.json()["hits"]] == [note["note_id"]]


@pytest.mark.parametrize("header", ["Last-Event-ID", "Idempotency-Key"])
async def test_a_nul_in_a_header_is_refused_and_nothing_runs(
    client: httpx.AsyncClient, header: str
) -> None:
    events = await chat(client, {"message": "What is RAG?"})
    thread_id = events[0].thread_id
    value = "1\x002"

    joined = await client.get(f"/v1/threads/{thread_id}/stream", headers={header: value})
    sent = await client.post("/v1/chat", json={"message": "Again"}, headers={header: value})

    _assert_unstorable(joined, f"header {header.lower()}")
    _assert_unstorable(sent, f"header {header.lower()}")
    assert len((await client.get("/v1/threads")).json()["threads"]) == 1
