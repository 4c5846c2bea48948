"""Oversized input is refused before it costs anything: a body above `CONSENTRY_MAX_BODY_BYTES`
gets 413 before it is parsed (and is not read past the limit), JSON nested deeper than
`CONSENTRY_MAX_JSON_DEPTH` or with arrays longer than `CONSENTRY_MAX_LIST_ITEMS` gets 422
`limit_exceeded` (never a `RecursionError` or a 5xx), and so do notes, edits and pages above their
settings. Every refusal names the setting, and nothing stored changes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from tests.sse import ask_for_note_edit, chat

JSON = {"Content-Type": "application/json"}


def _error_of(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == code, error
    return error


def _limit_exceeded(response: httpx.Response, setting: str, maximum: int) -> dict[str, Any]:
    error = _error_of(response, 422, "limit_exceeded")
    assert error["details"]["limit"] == setting
    assert error["details"]["max"] == maximum
    assert f"({setting})" in error["message"]
    assert str(maximum) in error["message"]
    return error


async def _threads(client: httpx.AsyncClient) -> list[Any]:
    threads: list[Any] = (await client.get("/v1/threads")).json()["threads"]
    return threads


async def test_a_body_above_the_limit_is_413_and_nothing_runs(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(max_body_bytes=2048) as client:
        response = await client.post("/v1/chat", json={"message": "x" * 3000})

        error = _error_of(response, 413, "body_too_large")
        assert error["details"] == {"limit": "max_body_bytes", "max": 2048}
        assert "2048 bytes (max_body_bytes)" in error["message"]
        assert await _threads(client) == []


async def test_a_declared_length_above_the_limit_is_refused_without_reading_the_body(
    open_client: Callable[..., Any],
) -> None:
    chunks_read = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal chunks_read
        chunks_read += 1
        yield b'{"message": "' + b"x" * 3000 + b'"}'

    async with open_client(max_body_bytes=2048) as client:
        response = await client.post(
            "/v1/chat", content=body(), headers={**JSON, "Content-Length": "3015"}
        )

        _error_of(response, 413, "body_too_large")
        assert chunks_read == 0


async def test_a_chunked_body_is_refused_once_it_passes_the_limit_and_not_read_further(
    open_client: Callable[..., Any],
) -> None:
    chunks_read = 0

    async def body() -> AsyncIterator[bytes]:  # no Content-Length: sent chunked
        nonlocal chunks_read
        yield b'{"message": "'
        for _ in range(100):
            chunks_read += 1
            yield b"x" * 1024
        yield b'"}'

    async with open_client(max_body_bytes=2048) as client:
        response = await client.post("/v1/chat", content=body(), headers=JSON)

        _error_of(response, 413, "body_too_large")
        assert chunks_read == 2  # 13 + 1024 + 1024 bytes pass 2048: the other 98 stay unread
        assert await _threads(client) == []


async def test_a_body_of_exactly_the_limit_is_accepted(open_client: Callable[..., Any]) -> None:
    async with open_client(max_body_bytes=2048) as client:
        project_id = (await client.get("/v1/projects")).json()["projects"][0]["project_id"]
        empty = len(b'{"title":"T","content":""}')
        padded = b'{"title":"T","content":"' + b"y" * (2048 - empty) + b'"}'
        assert len(padded) == 2048

        at_limit = await client.post(
            f"/v1/projects/{project_id}/notes", content=padded, headers=JSON
        )
        over = await client.post(
            f"/v1/projects/{project_id}/notes", content=padded[:-2] + b'y"}', headers=JSON
        )

        assert at_limit.status_code == 201, at_limit.text
        _error_of(over, 413, "body_too_large")
        notes = (await client.get(f"/v1/projects/{project_id}/notes")).json()["notes"]
        assert [len(n["content"]) for n in notes] == [2048 - empty]


def _nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


def _nested_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


async def test_json_nested_ten_thousand_deep_is_422_naming_the_limit_everywhere(
    client: httpx.AsyncClient,
) -> None:
    note, asked = await ask_for_note_edit(client)
    consent = asked[-2]
    deep_edit = '{"decision": "edit", "edited": ' + _nested_object(10_000) + "}"
    bodies = {
        "/v1/chat": '{"message": "Hi", "resume": ' + _nested_list(10_000) + "}",
        f"/v1/approvals/{consent.approval_id}/decision": deep_edit,
        f"/v1/projects/{note['project_id']}/notes": '{"title": ' + _nested_list(10_000) + "}",
        f"/v1/notes/{note['note_id']}": '{"version": 1, "content": ' + _nested_list(10_000) + "}",
    }

    for path, body in bodies.items():
        method = "PUT" if path.startswith("/v1/notes/") else "POST"
        response = await client.request(method, path, content=body, headers=JSON)

        _limit_exceeded(response, "max_json_depth", 32)
    approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
    assert approval["status"] == "pending"
    assert len(await _threads(client)) == 1
    versions = (await client.get(f"/v1/notes/{note['note_id']}/versions")).json()["versions"]
    assert [v["version"] for v in versions] == [1]


async def test_a_body_at_the_depth_limit_is_accepted_and_one_level_more_is_refused(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(max_json_depth=3) as client:
        note, asked = await ask_for_note_edit(client)
        consent = asked[-2]
        resume = {"thread_id": consent.thread_id, "resume": {"approval_id": consent.approval_id}}
        # body (1) > resume (2) > edited (3) > ["x"] (4)
        deeper = {**resume, "resume": {**resume["resume"], "decision": "edit"}}
        deeper["resume"]["edited"] = {"content": "Mine.\n", "tags": ["x"]}

        refused = await client.post("/v1/chat", json=deeper)
        deeper["resume"]["edited"] = {"content": "Mine.\n"}
        events = await chat(client, deeper)

        _limit_exceeded(refused, "max_json_depth", 3)
        assert [e.type for e in events if e.type in ("note", "final")] == ["note", "final"]
        assert events[-1].reason == "completed"
        assert (await client.get(f"/v1/notes/{note['note_id']}")).json()["content"] == "Mine.\n"


async def test_an_array_above_the_item_limit_is_refused_wherever_it_is(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(max_list_items=3) as client:
        _, asked = await ask_for_note_edit(client)
        consent = asked[-2]
        four = [{"approval_id": f"{n:032x}", "decision": "approve"} for n in range(4)]

        as_list = await client.post(
            "/v1/chat", json={"thread_id": consent.thread_id, "resume": four}
        )
        nested = await client.post(
            f"/v1/approvals/{consent.approval_id}/decision",
            json={"decision": "edit", "edited": {"content": "Mine.", "tags": [1, 2, 3, 4]}},
        )
        three = await client.post(
            "/v1/chat", json={"thread_id": consent.thread_id, "resume": four[:3]}
        )
        whole = await client.post("/v1/chat", content=b"[1,2,3,4]", headers=JSON)

        assert _limit_exceeded(as_list, "max_list_items", 3)["details"]["where"] == "resume"
        assert _limit_exceeded(nested, "max_list_items", 3)["details"]["where"] == "edited.tags"
        assert _error_of(three, 404, "approval_not_found")  # past the limit check, as usual
        assert _limit_exceeded(whole, "max_list_items", 3)["details"]["where"] == "the body"
        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        assert approval["status"] == "pending"


async def test_an_edit_above_the_limit_is_refused_and_the_consent_stays_pending(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(max_edit_chars=10) as client:
        note, asked = await ask_for_note_edit(client)
        consent = asked[-2]
        edit = {"decision": "edit", "edited": {"content": "x" * 11}}

        by_inbox = await client.post(f"/v1/approvals/{consent.approval_id}/decision", json=edit)
        by_chat = await client.post(
            "/v1/chat",
            json={
                "thread_id": consent.thread_id,
                "resume": {"approval_id": consent.approval_id, **edit},
            },
        )
        approval = (await client.get(f"/v1/approvals/{consent.approval_id}")).json()
        at_limit = await client.post(
            f"/v1/approvals/{consent.approval_id}/decision",
            json={"decision": "edit", "edited": {"content": "y" * 10}},
        )

        inbox_error = _limit_exceeded(by_inbox, "max_edit_chars", 10)
        chat_error = _limit_exceeded(by_chat, "max_edit_chars", 10)
        assert (inbox_error["details"]["where"], chat_error["details"]["where"]) == (
            "edited.content",
            "resume.edited.content",
        )
        assert approval["status"] == "pending"
        assert at_limit.status_code == 202, at_limit.text
        await client.services.executor.wait_for_runs()  # type: ignore[attr-defined]
        assert (await client.get(f"/v1/notes/{note['note_id']}")).json()["content"] == "y" * 10


async def test_note_content_above_the_limit_is_refused_on_create_and_update(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(max_note_chars=10) as client:
        project_id = (await client.get("/v1/projects")).json()["projects"][0]["project_id"]
        notes_url = f"/v1/projects/{project_id}/notes"

        created = await client.post(notes_url, json={"title": "T", "content": "x" * 11})
        at_limit = await client.post(notes_url, json={"title": "T", "content": "y" * 10})
        note_id = at_limit.json()["note_id"]
        updated = await client.put(f"/v1/notes/{note_id}", json={"version": 1, "content": "z" * 11})

        _limit_exceeded(created, "max_note_chars", 10)
        assert at_limit.status_code == 201, at_limit.text
        _limit_exceeded(updated, "max_note_chars", 10)
        notes = (await client.get(notes_url)).json()["notes"]
        assert [(n["content"], n["version"]) for n in notes] == [("y" * 10, 1)]


async def test_a_page_above_the_setting_is_refused_not_clamped(
    open_client: Callable[..., Any],
) -> None:
    async with open_client(max_page_size=5, max_search_results=3) as client:
        project_id = (await client.get("/v1/projects")).json()["projects"][0]["project_id"]
        search = f"/v1/projects/{project_id}/search"

        refused = {
            "threads": await client.get("/v1/threads", params={"limit": 6}),
            "approvals": await client.get("/v1/approvals", params={"limit": 6}),
            "search": await client.get(search, params={"q": "x", "limit": 4}),
        }
        accepted = [
            await client.get("/v1/threads", params={"limit": 5}),
            await client.get("/v1/approvals", params={"limit": 5}),
            await client.get(search, params={"q": "x", "limit": 3}),
        ]

        for name in ("threads", "approvals"):
            error = _limit_exceeded(refused[name], "max_page_size", 5)
            assert error["details"]["where"] == "limit"
        _limit_exceeded(refused["search"], "max_search_results", 3)
        assert [r.status_code for r in accepted] == [200, 200, 200]


@pytest.mark.parametrize("limit", ["0", "-1", "many"])
async def test_a_page_size_that_is_not_a_positive_number_is_request_invalid(
    client: httpx.AsyncClient, limit: str
) -> None:
    response = await client.get("/v1/threads", params={"limit": limit})

    _error_of(response, 422, "request_invalid")
