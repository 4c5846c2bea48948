"""A note's conversations live on the server: a thread remembers the note its first message named,
and ``GET /v1/threads?note_id=`` lists them, newest first, for whatever browser asks."""

from __future__ import annotations

from typing import Any

import httpx

from tests.sse import chat


async def _note(client: httpx.AsyncClient, title: str) -> dict[str, Any]:
    project = (await client.get("/v1/projects")).json()["projects"][0]
    response = await client.post(
        f"/v1/projects/{project['project_id']}/notes", json={"title": title, "content": "Text."}
    )
    assert response.status_code == 201, response.text
    note: dict[str, Any] = response.json()
    return note


async def _threads(client: httpx.AsyncClient, **params: str) -> list[dict[str, Any]]:
    response = await client.get("/v1/threads", params=params)
    assert response.status_code == 200, response.text
    threads: list[dict[str, Any]] = response.json()["threads"]
    return threads


async def test_a_notes_conversations_are_listed_newest_first(client: httpx.AsyncClient) -> None:
    rag, kana = await _note(client, "RAG"), await _note(client, "Kana")
    first = (await chat(client, {"message": "What is RAG?", "note_id": rag["note_id"]}))[0]
    await chat(client, {"message": "What is kana?", "note_id": kana["note_id"]})
    await chat(client, {"message": "Hello"})
    second = (await chat(client, {"message": "Tell me more", "note_id": rag["note_id"]}))[0]

    about_rag = await _threads(client, note_id=rag["note_id"])

    assert [t["thread_id"] for t in about_rag] == [second.thread_id, first.thread_id]
    assert {(t["note_id"], t["project_id"]) for t in about_rag} == {
        (rag["note_id"], rag["project_id"])
    }
    in_project = await _threads(client, project_id=rag["project_id"])
    assert len(in_project) == 4
    assert [t["note_id"] for t in await _threads(client)].count(None) == 1
    assert await _threads(client, note_id="no-such-note") == []


async def test_a_thread_started_without_a_note_takes_the_first_note_a_message_names(
    client: httpx.AsyncClient,
) -> None:
    rag, kana = await _note(client, "RAG"), await _note(client, "Kana")
    started = (await chat(client, {"message": "Hello"}))[0]
    thread_id = started.thread_id

    await chat(client, {"thread_id": thread_id, "message": "And RAG?", "note_id": rag["note_id"]})
    await chat(client, {"thread_id": thread_id, "message": "Kana?", "note_id": kana["note_id"]})

    assert [t["thread_id"] for t in await _threads(client, note_id=rag["note_id"])] == [thread_id]
    assert await _threads(client, note_id=kana["note_id"]) == []
    detail = (await client.get(f"/v1/threads/{thread_id}")).json()
    assert detail["note_id"] == rag["note_id"]


async def test_another_users_note_conversations_are_not_listed(
    open_client: Any,
) -> None:
    async with open_client(api_keys="ka=acme:alice,kb=acme:bob") as client:
        alice = {"Authorization": "Bearer ka"}
        project = (await client.get("/v1/projects", headers=alice)).json()["projects"][0]
        note = (
            await client.post(
                f"/v1/projects/{project['project_id']}/notes",
                json={"title": "Mine", "content": "x"},
                headers=alice,
            )
        ).json()
        await chat(client, {"message": "Hi", "note_id": note["note_id"]}, headers=alice)

        bob = await client.get(
            "/v1/threads",
            params={"note_id": note["note_id"]},
            headers={"Authorization": "Bearer kb"},
        )

        assert bob.status_code == 200
        assert bob.json()["threads"] == []
