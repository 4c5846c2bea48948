"""The common refusals read as one sentence with a code of their own, not as pydantic's dump:
an empty message, an unknown decision (one error naming the decisions, whether ``resume`` is a
decision or a list), and a body that is not sent as JSON (415). The schema's other refusals are
still 422 ``request_invalid`` with ``details.errors``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from consentry.schemas.events import ConsentEvent
from tests.sse import after_a_question

UNKNOWN_DECISION = (
    "Unknown decision 'maybe': a decision is approve, edit, reject, answer or respond."
)
SEND_JSON = "Send JSON with Content-Type: application/json."


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error"]
    assert body["error"]["code"] == code, body
    error: dict[str, Any] = body["error"]
    return error


async def _pending(client: httpx.AsyncClient) -> ConsentEvent:
    project = (await client.get("/v1/projects")).json()["projects"][0]["project_id"]
    created = await client.post(
        f"/v1/projects/{project}/notes", json={"title": "RAG", "content": "RAG looks things up."}
    )
    note_id = created.json()["note_id"]
    events = await after_a_question(
        client, {"message": "Add a summary of our discussion to my note", "note_id": note_id}
    )
    consent = events[-2]
    assert isinstance(consent, ConsentEvent)
    return consent


@pytest.mark.parametrize("message", ["", " \n\t "], ids=["empty", "blank"])
async def test_an_empty_message_is_empty_message_in_one_sentence(
    client: httpx.AsyncClient, message: str
) -> None:
    response = await client.post("/v1/chat", json={"message": message})

    error = _error(response, 422, "empty_message")
    assert error["message"] == "Write a message first."
    assert error["details"] == {
        "errors": [
            {
                "loc": ["body", "message"],
                "msg": "Write a message first.",
                "type": "string_pattern_mismatch",
            }
        ]
    }
    assert (await client.get("/v1/threads")).json()["threads"] == []


def _chat_resume(c: ConsentEvent) -> tuple[str, dict[str, Any], list[str | int]]:
    decision = {"approval_id": c.approval_id, "decision": "maybe"}
    return (
        "/v1/chat",
        {"thread_id": c.thread_id, "resume": decision},
        ["body", "resume", "decision"],
    )


def _chat_resume_list(c: ConsentEvent) -> tuple[str, dict[str, Any], list[str | int]]:
    decisions = [{"approval_id": c.approval_id, "decision": "maybe"}]
    return (
        "/v1/chat",
        {"thread_id": c.thread_id, "resume": decisions},
        ["body", "resume", 0, "decision"],
    )


def _inbox(c: ConsentEvent) -> tuple[str, dict[str, Any], list[str | int]]:
    return f"/v1/approvals/{c.approval_id}/decision", {"decision": "maybe"}, ["body", "decision"]


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(_chat_resume, id="chat-resume"),
        pytest.param(_chat_resume_list, id="chat-resume-list"),
        pytest.param(_inbox, id="approvals-inbox"),
    ],
)
async def test_an_unknown_decision_is_one_error_naming_the_decisions(
    client: httpx.AsyncClient,
    build: Callable[[ConsentEvent], tuple[str, dict[str, Any], list[str | int]]],
) -> None:
    consent = await _pending(client)
    path, body, loc = build(consent)

    response = await client.post(path, json=body)

    error = _error(response, 422, "unknown_decision")
    assert error["message"] == UNKNOWN_DECISION
    assert error["details"] == {
        "allowed_decisions": ["approve", "edit", "reject", "answer", "respond"],
        "errors": [{"loc": loc, "msg": UNKNOWN_DECISION, "type": "literal_error"}],
    }
    approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
    assert approval["status"] == "pending"


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
async def test_a_body_not_sent_as_json_is_415_unsupported_media_type(
    client: httpx.AsyncClient, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    project = (await client.get("/v1/projects")).json()["projects"][0]["project_id"]
    note = (
        await client.post(
            f"/v1/projects/{project}/notes", json={"title": "RAG", "content": "Retrieval."}
        )
    ).json()
    requests = [
        ("POST", "/v1/chat", b'{"message": "What is RAG?"}'),
        ("POST", "/v1/projects", b'{"name": "Learning"}'),
        ("PUT", f"/v1/notes/{note['note_id']}", b'{"version": 1, "content": "Mine."}'),
        ("POST", "/v1/approvals/0123456789abcdef0123456789abcdef/decision", b'{"decision": "a"}'),
    ]

    for method, path, body in requests:
        response = await client.request(method, path, content=body, headers=headers)

        error = _error(response, 415, "unsupported_media_type")
        assert error["message"] == SEND_JSON
        assert error["details"] == {"content_type": content_type}
    assert (await client.get("/v1/threads")).json()["threads"] == []
    assert (await client.get(f"/v1/notes/{note['note_id']}")).json()["version"] == 1
    assert len((await client.get("/v1/projects")).json()["projects"]) == 1


async def test_json_with_a_charset_or_a_json_suffix_is_json(client: httpx.AsyncClient) -> None:
    for content_type in ("application/json; charset=utf-8", "application/vnd.consentry+json"):
        response = await client.post(
            "/v1/projects", content=b'{"name": "Learning"}', headers={"Content-Type": content_type}
        )

        assert response.status_code == 201, response.text


async def test_a_caller_without_a_key_hears_401_before_415(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(api_keys="k1=t:u") as client:
        response = await client.post(
            "/v1/chat", content=b"message=hi", headers={"Content-Type": "text/plain"}
        )

        _error(response, 401, "unauthorized")


async def test_other_schema_refusals_stay_request_invalid_with_their_errors(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/v1/chat", json={"message": "Hi", "colour": "red"})

    error = _error(response, 422, "request_invalid")
    assert [e["loc"] for e in error["details"]["errors"]] == [["body", "colour"]]
