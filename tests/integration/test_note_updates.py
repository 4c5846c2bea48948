"""``PUT /v1/notes/{note_id}`` refuses updates that change nothing or name an impossible version,
before anything is written."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

MAX_VERSION = 2**31 - 1  # the largest version a note can have, on every database


async def _note(client: httpx.AsyncClient) -> dict[str, Any]:
    project = (await client.post("/v1/projects", json={"name": "Learning"})).json()
    response = await client.post(
        f"/v1/projects/{project['project_id']}/notes", json={"title": "RAG", "content": "body"}
    )
    assert response.status_code == 201, response.text
    note: dict[str, Any] = response.json()
    return note


async def _versions(client: httpx.AsyncClient, note_id: str) -> list[tuple[int, str, str]]:
    response = await client.get(f"/v1/notes/{note_id}/versions")
    assert response.status_code == 200, response.text
    return [(v["version"], v["title"], v["content"]) for v in response.json()["versions"]]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"version": 1}, id="only-version"),
        pytest.param({"version": 1, "title": None, "content": None}, id="explicit-nulls"),
    ],
)
async def test_an_update_with_neither_title_nor_content_is_refused_and_writes_nothing(
    client: httpx.AsyncClient, body: dict[str, Any]
) -> None:
    note = await _note(client)

    response = await client.put(f"/v1/notes/{note['note_id']}", json=body)

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "request_invalid"
    assert await _versions(client, note["note_id"]) == [(1, "RAG", "body")]
    assert (await client.get(f"/v1/notes/{note['note_id']}")).json() == note


@pytest.mark.parametrize("version", [MAX_VERSION + 1, 2**63, 10**30])
async def test_a_version_beyond_64_bits_is_refused_as_invalid_and_writes_nothing(
    client: httpx.AsyncClient, version: int
) -> None:
    note = await _note(client)

    response = await client.put(
        f"/v1/notes/{note['note_id']}", json={"version": version, "content": "overflow"}
    )

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "request_invalid"
    assert ["body", "version"] in [e["loc"] for e in error["details"]["errors"]]
    assert await _versions(client, note["note_id"]) == [(1, "RAG", "body")]


async def test_the_largest_32_bit_version_is_accepted_as_a_version_and_is_a_conflict(
    client: httpx.AsyncClient,
) -> None:
    note = await _note(client)

    response = await client.put(
        f"/v1/notes/{note['note_id']}", json={"version": MAX_VERSION, "content": "from the future"}
    )

    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["code"], error["details"]["base_version"]) == ("version_conflict", MAX_VERSION)
    assert await _versions(client, note["note_id"]) == [(1, "RAG", "body")]
